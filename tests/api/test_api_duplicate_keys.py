"""A JSON body naming a key twice is ambiguous (`json.loads` silently keeps the last): refused with 400
problem+json naming the key, at any depth, on every route, and nothing is written."""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker

from pokna_verify.bounded_input import duplicate_key
from support.api_checks import assert_names_field, assert_problem, database_state
from support.json_strategies import json_like
from support.tenant_api import new_tenant

Location = tuple[str | int, ...]


def _objects(value: Any, here: Location = ()) -> list[Location]:
    """Where the non-empty objects of a document are."""
    found: list[Location] = []
    if isinstance(value, dict):
        found += [here] if value else []
        for key, member in value.items():
            found += _objects(member, (*here, key))
    elif isinstance(value, list):
        for index, member in enumerate(value):
            found += _objects(member, (*here, index))
    return found


def _dumps_repeating(value: Any, target: Location, here: Location = ()) -> str:
    """`json.dumps`, except that the object at `target` names its first key a second time, last."""
    if isinstance(value, dict):
        members = [
            f"{json.dumps(key)}:{_dumps_repeating(item, target, (*here, key))}" for key, item in value.items()
        ]
        if here == target:
            members.append(f"{json.dumps(next(iter(value)))}:null")
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        return (
            "[" + ",".join(_dumps_repeating(item, target, (*here, i)) for i, item in enumerate(value)) + "]"
        )
    return json.dumps(value)


@given(json_like(max_leaves=30))
def test_a_document_without_repeated_keys_is_unambiguous(document: Any) -> None:
    assert duplicate_key(json.dumps(document).encode()) is None


@given(document=json_like(max_leaves=30), data=st.data())
def test_a_repeated_key_is_found_wherever_it_is(document: Any, data: st.DataObject) -> None:
    document = {"wrapper": document}  # at least one object to repeat a key in
    target = data.draw(st.sampled_from(_objects(document)), label="target")
    node = document
    for part in target:
        node = node[part]
    assert duplicate_key(_dumps_repeating(document, target).encode()) == (*target, next(iter(node)))


def test_not_json_is_left_to_the_json_refusal() -> None:
    assert duplicate_key(b'{"amount": 1,') is None
    assert duplicate_key(b"[" * 100_000) is None


def test_a_deposit_with_two_amounts_is_refused_and_posts_nothing(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = new_tenant(client, sessions)
    wallet = api.wallet(10)
    before = database_state(sessions)
    for body, field in [
        (b'{"amount":1,"amount":7}', "body.amount"),
        (b'{"amount":1,"metadata":{"psp":"a","psp":"b"}}', "body.metadata.psp"),
        (b'{"amount":1,"reference":"r","Amount":2,"reference":"s"}', "body.reference"),
        # A number past the verifiers' digit limit beside them hid the repeated key (the review of issue 46).
        (b'{"amount":5,"amount":1,"x":' + b"9" * 101 + b"}", "body.amount"),
        (b'{"amount":5,"amount":1,"x":1e999}', "body.amount"),
    ]:
        for kind in ("deposits", "withdrawals"):
            response = api.post(
                f"/v1/accounts/{wallet}/{kind}",
                content=body,
                headers={"Content-Type": "application/json", "Idempotency-Key": f"dup-{kind}-{field}"},
            )
            assert_names_field(assert_problem(response, 400, "duplicate_key"), field)
    assert database_state(sessions) == before
    assert api.balance(wallet) == 10


def test_every_write_refuses_a_repeated_key_at_any_depth(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = new_tenant(client, sessions)
    wallet = api.wallet(10)
    document = client.get("/openapi.json").json()
    writes = [
        (method, path)
        for path, item in document["paths"].items()
        for method in item
        if method in ("post", "put", "patch")
    ]
    assert len(writes) >= 13  # every POST, PUT and PATCH of the document
    before = database_state(sessions)
    for method, path in writes:
        concrete = re.sub(r"\{[a-z_]+\}", "x_1", path.replace("{account_id}", wallet))
        for body, field in [
            (b'{"type":"roll","type":"cancel"}', "body.type"),
            (b'{"player_account_ids":[{"a":1,"b":2,"a":3}]}', "body.player_account_ids.0.a"),
        ]:
            for content_type in ("application/json", None):
                headers = {"Content-Type": content_type} if content_type else {}
                headers = {**api.headers, **headers}
                response = api.client.request(method, concrete, content=body, headers=headers)
                try:
                    assert_names_field(assert_problem(response, 400, "duplicate_key"), field)
                except AssertionError as error:
                    raise AssertionError(f"{method.upper()} {path} {body!r}: {error}") from error
    assert database_state(sessions) == before
