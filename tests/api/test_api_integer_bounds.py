"""No integer a client sends can make a 5xx: every integer input of every operation (path, query, body) has
bounds in the schema no wider than its column, and any number outside them is a 422 naming the field.

The inputs are read from the OpenAPI document the app serves, so an integer input added later without a
request below to carry it fails `test_every_integer_input_is_probed`."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker

from support.api_checks import PROBLEM_JSON, assert_names_field, assert_problem
from support.tenant_api import TenantApi, money_key, new_tenant

INTEGER_MAX = 2**31 - 1  # PostgreSQL integer
BIGINT_MAX = 2**63 - 1  # PostgreSQL bigint

# What each integer input is compared with in the database (or could be): its schema may not allow more.
COLUMN_MAXIMUM = {
    "query.limit": INTEGER_MAX,
    "query.starting_after": INTEGER_MAX,  # game_event.seq
    "query.from_seq": BIGINT_MAX,  # journal_transaction.seq
    "query.to_seq": BIGINT_MAX,
    "query.log_since": BIGINT_MAX,  # game_log_checkpoint.tree_size
    "query.chain": 2**15 - 1,  # journal_transaction.chain, a smallint (the schema allows 0..15)
    "body.amount": BIGINT_MAX,
    "body.stake": BIGINT_MAX,
    "body.challenge_raise": BIGINT_MAX,
    "body.turn_timeout_seconds": INTEGER_MAX,
    "body.expected_version": INTEGER_MAX,  # game.version
    "body.rake.bps": INTEGER_MAX,  # game/tenant rake_bps
    "body.rake.cap": BIGINT_MAX,  # game/tenant rake_cap
    "path.tree_size": BIGINT_MAX,  # game_log.size, game_log_checkpoint.tree_size
    "query.tree_size": BIGINT_MAX,
    "query.first": BIGINT_MAX,
    "query.second": BIGINT_MAX,
}

EDGES = [
    0,
    1,
    -1,
    2**31 - 1,
    2**31,
    -(2**31) - 1,
    2**32,
    2**53 + 1,
    2**63 - 1,
    2**63,
    -(2**63) - 1,
    2**64,
    10**30,
]


@dataclass(frozen=True)
class IntegerInput:
    method: str
    path: str
    name: str  # as a problem names it: `query.limit`, `body.amount`
    minimum: int | float | None
    exclusive_minimum: int | float | None
    maximum: int | float | None

    def allows(self, value: int) -> bool:
        above = (self.minimum is None or value >= self.minimum) and (
            self.exclusive_minimum is None or value > self.exclusive_minimum
        )
        return above and (self.maximum is None or value <= self.maximum)


def integer_inputs(document: dict[str, Any]) -> list[IntegerInput]:
    schemas = document["components"]["schemas"]
    found: dict[tuple[str, str, str], IntegerInput] = {}

    def walk(schema: dict[str, Any], method: str, path: str, name: str) -> None:
        if "$ref" in schema:
            walk(schemas[schema["$ref"].rsplit("/", 1)[1]], method, path, name)
            return
        for key in ("anyOf", "oneOf", "allOf"):
            for member in schema.get(key, []):
                walk(member, method, path, name)
        if schema.get("type") == "integer":
            found[(method, path, name)] = IntegerInput(
                method,
                path,
                name,
                schema.get("minimum"),
                schema.get("exclusiveMinimum"),
                schema.get("maximum"),
            )
        for field, member in schema.get("properties", {}).items():
            walk(member, method, path, f"{name}.{field}")
        if "items" in schema:
            walk(schema["items"], method, path, f"{name}.0")

    for path, item in document["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                walk(parameter["schema"], method.upper(), path, f"{parameter['in']}.{parameter['name']}")
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                walk(body["schema"], method.upper(), path, "body")
    return sorted(found.values(), key=lambda found_input: (found_input.path, found_input.name))


@cache
def committed_inputs() -> list[IntegerInput]:
    """From the committed document, which tests/test_openapi_document.py holds equal to the app's."""
    with (Path(__file__).parents[2] / "openapi" / "openapi.json").open() as committed:
        return integer_inputs(json.load(committed))


def test_every_integer_input_has_bounds_within_its_column() -> None:
    inputs = committed_inputs()
    assert {found.name for found in inputs} == set(COLUMN_MAXIMUM)
    for found in inputs:
        assert found.minimum is not None or found.exclusive_minimum is not None, found
        assert found.maximum is not None, found
        assert found.maximum <= COLUMN_MAXIMUM[found.name], found


@dataclass
class Saloon:
    api: TenantApi
    vigo: str
    players: list[str]
    game_id: str
    endpoint_id: str

    def requests(self) -> dict[tuple[str, str], Callable[[str, int], Any]]:
        """One valid request per operation with integer inputs, with one input replaced by `value`."""
        api = self.api
        rake = {"rake": {"bps": 0}}
        seats = {"vigo_account_id": self.vigo, "player_account_ids": self.players, "stake": 1, **rake}
        table = {"account_ids": [self.vigo, *self.players], "stake": 1, **rake}
        seed = {"type": "set_client_seed", "account_id": self.players[0], "client_seed": "bounds"}

        def body(post: Callable[[dict[str, Any]], Any], base: dict[str, Any]) -> Callable[[str, int], Any]:
            def send(name: str, value: int) -> Any:
                sent = copy.deepcopy(base)
                *parents, leaf = name.removeprefix("body.").split(".")
                target = sent
                for parent in parents:
                    target = target.setdefault(parent, {})
                target[leaf] = value
                return post(sent)

            return send

        def query(path: str) -> Callable[[str, int], Any]:
            return lambda name, value: api.get(path, params={name.removeprefix("query."): value})

        def public(path: str, base: dict[str, int]) -> Callable[[str, int], Any]:
            """A route that takes no key (a tenant's public log)."""
            return lambda name, value: api.client.get(
                path, params={**base, name.removeprefix("query."): value}
            )

        return {
            ("POST", "/v1/accounts/{account_id}/deposits"): body(
                lambda sent: api.post(f"/v1/accounts/{self.vigo}/deposits", sent, headers=money_key()),
                {"amount": 1},
            ),
            ("POST", "/v1/accounts/{account_id}/withdrawals"): body(
                lambda sent: api.post(f"/v1/accounts/{self.vigo}/withdrawals", sent, headers=money_key()),
                {"amount": 1},
            ),
            ("GET", "/v1/accounts/{account_id}/transactions"): query(
                f"/v1/accounts/{self.vigo}/transactions"
            ),
            ("POST", "/v1/games"): body(lambda sent: api.post("/v1/games", sent), seats),
            ("POST", "/v1/games/{game_id}/actions"): body(
                lambda sent: api.post(f"/v1/games/{self.game_id}/actions", sent), seed
            ),
            ("GET", "/v1/games/{game_id}/events"): query(f"/v1/games/{self.game_id}/events"),
            ("GET", "/v1/ledger/export"): query("/v1/ledger/export"),
            ("GET", "/v1/audit/bundle"): query("/v1/audit/bundle"),
            ("GET", "/v1/webhooks/endpoints"): query("/v1/webhooks/endpoints"),
            ("GET", "/v1/webhooks/endpoints/{endpoint_id}/deliveries"): query(
                f"/v1/webhooks/endpoints/{self.endpoint_id}/deliveries"
            ),
            ("POST", "/v1/tables"): body(lambda sent: api.post("/v1/tables", sent), table),
            ("GET", "/v1/logs/{tenant_id}/checkpoints/{tree_size}"): lambda _name, value: api.client.get(
                f"/v1/logs/{api.tenant_id}/checkpoints/{value}"
            ),
            ("GET", "/v1/logs/{tenant_id}/games/{game_id}/inclusion"): public(
                f"/v1/logs/{api.tenant_id}/games/{self.game_id}/inclusion", {}
            ),
            # `second` as large as a size can be, so that no `first` the schema allows comes after it.
            ("GET", "/v1/logs/{tenant_id}/consistency"): public(
                f"/v1/logs/{api.tenant_id}/consistency", {"first": 1, "second": BIGINT_MAX}
            ),
            ("PUT", "/v1/tenant/settings"): body(
                lambda sent: api.client.put("/v1/tenant/settings", json=sent, headers=api.headers), rake
            ),
        }


@pytest.fixture
def saloon(client: TestClient, sessions: sessionmaker[Session]) -> Saloon:
    api = new_tenant(client, sessions)
    vigo = api.wallet(1000)
    players = [api.wallet(1000), api.wallet(1000)]
    created = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": players, "stake": 1})
    assert created.status_code == 201, created.text
    endpoint = api.post(
        "/v1/webhooks/endpoints", {"url": "http://127.0.0.1:9/hooks", "event_types": ["game.created"]}
    )
    assert endpoint.status_code == 201, endpoint.text
    return Saloon(api, vigo, players, created.json()["id"], endpoint.json()["id"])


def test_every_integer_input_is_probed(saloon: Saloon) -> None:
    probed = saloon.requests()
    assert {(found.method, found.path) for found in committed_inputs()} == set(probed)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_integer_is_refused_by_name_or_served_never_a_5xx(saloon: Saloon, data: st.DataObject) -> None:
    found = data.draw(st.sampled_from(committed_inputs()), label="input")
    value = data.draw(
        st.one_of(st.sampled_from(EDGES), st.integers(), st.integers(min_value=-(2**70), max_value=2**70)),
        label="value",
    )
    response = saloon.requests()[(found.method, found.path)](found.name, value)
    assert response.status_code < 500, (found, value, response.text)
    if found.allows(value):
        problem = response.json() if response.headers["content-type"] == PROBLEM_JSON else {}
        named = [param["name"] for param in problem.get("invalid_params") or []]
        assert found.name not in named, (found, value, response.text)
    else:
        problem = assert_problem(response, 422, "validation_error")
        assert_names_field(problem, found.name)


@pytest.mark.parametrize(
    ("path", "name", "value"),
    [
        ("/v1/games/{game}/events", "starting_after", 2**31),
        ("/v1/games/{game}/events", "starting_after", 2**63),
        ("/v1/ledger/export", "from_seq", 2**63),
        ("/v1/ledger/export", "to_seq", 2**64),
    ],
)
def test_the_reported_cursor_and_seqs_past_their_columns_are_422(
    saloon: Saloon, path: str, name: str, value: int
) -> None:
    response = saloon.api.get(path.format(game=saloon.game_id), params={name: value})
    assert_names_field(assert_problem(response, 422, "validation_error"), f"query.{name}")
