from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from pokna.app import create_app
from pokna.app.openapi_document import UNCONNECTED_DATABASE_URL, openapi_document, render_openapi
from pokna.ledger import InvalidAccount
from pokna.ledger.model import check_currency
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from pokna_verify.fairness.beacon import BEACON_PROTOCOL
from pokna_verify.fairness.protocol import PROTOCOL
from pokna_verify.game import ActionName, Phase
from pokna_verify.game.events import EventKind
from support.problem_check import documented_codes

COMMITTED = Path(__file__).resolve().parents[1] / "openapi" / "openapi.json"


def test_committed_openapi_document_is_current() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == render_openapi(), (
        "openapi/openapi.json is stale: run `make openapi` and commit the result"
    )


def test_rendering_is_deterministic() -> None:
    assert render_openapi() == render_openapi()


def test_every_error_response_is_problem_json() -> None:
    document = openapi_document()
    assert document["openapi"].startswith("3.1")
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")):
                    assert list(response["content"]) == ["application/problem+json"], (path, method, status)
    assert "HTTPValidationError" not in json.dumps(document)


def test_every_request_body_and_error_is_documented_with_examples() -> None:
    document = openapi_document()
    schemas = document["components"]["schemas"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            assert operation.get("summary"), (path, method)
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")):
                    assert response["content"]["application/problem+json"]["examples"], (path, method, status)
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None:
                continue
            ref = body["schema"].get("$ref", "")
            schema = schemas[ref.rsplit("/", 1)[-1]] if ref else body["schema"]
            assert body.get("examples") or schema.get("examples"), (path, method)


def _escaped(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def _json_answers(document: dict[str, Any]) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                for media, content in response.get("content", {}).items():
                    if media in ("application/json", "application/problem+json"):
                        pointer = (
                            f"/paths/{_escaped(path)}/{method}/responses/{status}/content/{_escaped(media)}"
                        )
                        yield f"{method.upper()} {path}", status, media, {**content, "pointer": pointer}


def _examples(document: dict[str, Any], content: dict[str, Any]) -> list[Any]:
    """The examples shown for an answer: its own, or its model's."""
    found = [content["example"]] if "example" in content else []
    found += [example["value"] for example in content.get("examples", {}).values()]
    ref = content["schema"].get("$ref")
    if not found and ref:
        found = document["components"]["schemas"][ref.rsplit("/", 1)[-1]].get("examples", [])
    return found


def test_every_operation_is_described_tagged_and_named() -> None:
    document = openapi_document()
    ids = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            assert operation.get("description"), (method, path)
            assert operation.get("tags"), (method, path)
            ids.append(operation["operationId"])
    assert len(ids) == len(set(ids))


def test_every_json_answer_has_examples_that_fit_its_schema() -> None:
    """Every 2xx and error answer shows at least one example, and each example is valid against the
    schema it illustrates (with the document's own components), so the examples cannot drift."""
    document = openapi_document()
    registry = Registry().with_resource("urn:pokna", Resource.from_contents(document, DRAFT202012))
    for operation, status, media, content in _json_answers(document):
        examples = _examples(document, content)
        assert examples, (operation, status, media)
        validator = Draft202012Validator(
            {"$ref": f"urn:pokna#{content['pointer']}/schema"}, registry=registry
        )
        for example in examples:
            errors = [error.message for error in validator.iter_errors(example)]
            assert not errors, (operation, status, errors[:3])


def test_problem_examples_carry_their_status_and_every_error_status_is_a_problem() -> None:
    for operation, status, media, content in _json_answers(openapi_document()):
        if status.startswith(("4", "5")):
            assert media == "application/problem+json", (operation, status)
            for code, example in content["examples"].items():
                assert (example["value"]["status"], example["value"]["code"]) == (int(status), code)


def test_closed_values_are_enums() -> None:
    schemas = openapi_document()["components"]["schemas"]
    assert set(schemas["Phase"]["enum"]) == {phase.value for phase in Phase}
    assert schemas["GameOut"]["properties"]["phase"] == {
        "$ref": "#/components/schemas/Phase",
        "description": "Where the game is in the rules (docs/rules.md).",
    }
    assert set(schemas["SeatOut"]["properties"]["status"]["enum"]) == {
        "vigo",
        "to_roll",
        "in_favor",
        "eliminated",
    }
    allowed = schemas["TurnOut"]["properties"]["allowed_actions"]["items"]["enum"]
    assert set(allowed) == {name.value for name in ActionName if name is not ActionName.TIMEOUT} | {
        "set_client_seed"
    }
    kinds = set(schemas["GameEventOut"]["discriminator"]["mapping"])
    assert {kind.value for kind in EventKind} <= kinds
    assert set(schemas["AccountOut"]["properties"]["kind"]["$ref"].split("/")[-1:]) == {"AccountKind"}
    for named_by in ("SignedProofOut", "CommitmentReceiptOut", "FairnessOut"):
        protocol = schemas[named_by]["properties"]["protocol"]
        assert (protocol["type"], protocol["enum"]) == ("string", [PROTOCOL, BEACON_PROTOCOL]), named_by


def test_no_operation_lists_a_problem_it_cannot_answer_by_construction() -> None:
    """The catalogue's complaints of the issue: a health probe lists no game refusal, opening a wallet no
    vote refusal, a public page no 401."""
    paths = openapi_document()["paths"]
    assert documented_codes(paths["/healthz"]["get"]) == {
        (500, "internal_error"),
        (413, "payload_too_large"),
        (408, "request_timeout"),  # any request may send a body, and stop half way
        (429, "too_many_requests"),  # per client address, without a known key
    }
    assert (409, "already_voted") not in documented_codes(paths["/v1/accounts"]["post"])
    assert not any(status == 401 for status, _ in documented_codes(paths["/v1/fairness/keys"]["get"]))
    assert (409, "already_voted") in documented_codes(paths["/v1/games/{game_id}/actions"]["post"])


@functools.cache
def _currency_pattern() -> re.Pattern[str]:
    """The documented pattern, with `$` as JSON Schema (ECMA-262) means it: the very end of the text."""
    schemas = openapi_document()["components"]["schemas"]
    return re.compile(schemas["AccountCreate"]["properties"]["currency"]["pattern"].replace("$", r"\Z"))


@given(st.text(alphabet=st.characters(codec="ascii"), max_size=20))
def test_the_documented_currency_pattern_is_what_the_ledger_accepts(currency: str) -> None:
    try:
        check_currency(currency)
        accepted = True
    except InvalidAccount:
        accepted = False
    assert (_currency_pattern().search(currency) is not None) == accepted
    assert _currency_pattern().search("22AQ0") is None
    assert _currency_pattern().search("TRUE") is None  # a word Beancount reads as a value


def test_the_document_is_served_from_bytes_built_once() -> None:
    """Not serialized again for every anonymous request (issue 28, F5): a change to the document the app
    holds after the first answer shows in no later one."""
    settings = Settings(env=Environment.TEST, database_url=UNCONNECTED_DATABASE_URL)
    app = create_app(settings, Runtime.from_settings(settings))
    http = TestClient(app)
    first = http.get("/openapi.json")
    assert first.headers["content-type"] == "application/json"
    assert first.json() == openapi_document()
    app.openapi()["info"]["title"] = "changed after the first answer"
    assert http.get("/openapi.json").content == first.content


def _untyped_objects(node: Any, path: str) -> Iterator[str]:
    """Every schema in `node` that is an object of unknown shape: no properties, no typed values."""
    if isinstance(node, dict):
        if node.get("type") == "object" and not node.get("properties"):
            values = node.get("additionalProperties", True)
            if values is True or values == {}:
                yield path
        for key, value in node.items():
            yield from _untyped_objects(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _untyped_objects(value, f"{path}/{index}")


def test_no_schema_is_an_untyped_object() -> None:
    """The proof's insides, the receipt, the events' data were `object` once (issue 26): a generator made
    them `Record<string, unknown>` and the verifier had to write its own types."""
    document = openapi_document()
    assert list(_untyped_objects(document["components"]["schemas"], "#/components/schemas")) == []
    assert list(_untyped_objects(document["paths"], "#/paths")) == []
    assert list(_untyped_objects(document["webhooks"], "#/webhooks")) == []


def test_webhook_payloads_use_the_rest_answers_enums() -> None:
    schemas = openapi_document()["components"]["schemas"]

    def enum_of(schema: dict[str, Any]) -> list[str]:
        if "anyOf" in schema:
            return [value for option in schema["anyOf"] for value in option.get("enum", [])]
        return list(schema.get("items", schema)["enum"])

    turn, told = schemas["TurnOut"]["properties"], schemas["GameTurnData"]["properties"]
    assert enum_of(told["allowed_actions"]) == enum_of(turn["allowed_actions"])
    assert enum_of(told["default_action"]) == enum_of(turn["default_action"])
    assert told["phase"]["$ref"] == schemas["GameOut"]["properties"]["phase"]["$ref"]
    assert enum_of(schemas["GameEndedData"]["properties"]["reason"]) == enum_of(
        schemas["OutcomeOut"]["properties"]["reason"]
    )
    timed_out = schemas["GameTurnTimedOutData"]["properties"]["applied_action"]
    assert enum_of(timed_out) == enum_of(turn["default_action"])


def test_every_webhook_names_its_type_as_required() -> None:
    document = openapi_document()
    for name, item in document["webhooks"].items():
        ref = item["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        schema = document["components"]["schemas"][ref.rsplit("/", 1)[-1]]
        assert schema["required"][0] == "type", name
        assert schema["properties"]["type"]["const"] == name


def test_the_public_link_is_narrowed_by_revealed() -> None:
    schemas = openapi_document()["components"]["schemas"]
    variants = [schemas[option["$ref"].rsplit("/", 1)[-1]] for option in schemas["FairnessLinkOut"]["oneOf"]]
    assert [variant["properties"]["revealed"]["const"] for variant in variants] == [False, True]
    assert variants[0]["properties"]["proof"]["type"] == "null"
    # Sent, but not required: openapi-fetch drops a required property typed only null (pokna.dealer.schemas).
    assert "proof" not in variants[0]["required"]
    assert variants[1]["properties"]["proof"]["$ref"].endswith("/SignedProofOut")
    proof = schemas["SignedProofOut"]["properties"]
    assert proof["rolls"]["items"]["$ref"].endswith("/ProofRoll")
    assert proof["game"]["$ref"].endswith("/ProofTerms")


def test_a_games_proof_answer_is_exactly_one_of_the_proof_and_the_pending_answer() -> None:
    """No `discriminator`: the signed proof has no `revealed` member, and none can be added beside its
    signature; only the pending answer carries `revealed: false`."""
    document = openapi_document()
    answer = document["paths"]["/v1/games/{game_id}/proof"]["get"]["responses"]["200"]["content"]
    options = answer["application/json"]["schema"]["oneOf"]
    assert [option["$ref"].rsplit("/", 1)[-1] for option in options] == ["SignedProofOut", "ProofPendingOut"]
    schemas = document["components"]["schemas"]
    assert schemas["ProofPendingOut"]["properties"]["revealed"]["const"] is False
    assert "revealed" in schemas["ProofPendingOut"]["required"]
    assert "revealed" not in schemas["SignedProofOut"]["properties"]
    assert schemas["SignedProofOut"]["properties"]["document"]["const"] == "proof"
    assert "document" not in schemas["ProofPendingOut"]["properties"]


def test_every_webhook_example_fits_its_schema() -> None:
    """`game.created` lacked `table_id` and `ledger.withdrawal.posted` its `reference` (FastAPI drops
    nulls): a validator of the examples (Spectral) refused them."""
    document = openapi_document()
    registry = Registry().with_resource("urn:pokna", Resource.from_contents(document, DRAFT202012))
    for name, item in document["webhooks"].items():
        body = item["post"]["requestBody"]["content"]["application/json"]
        validator = Draft202012Validator(
            {
                "$ref": f"urn:pokna#/webhooks/{_escaped(name)}/post/requestBody/content/application~1json/schema"
            },
            registry=registry,
        )
        errors = [error.message for error in validator.iter_errors(body["example"])]
        assert not errors, (name, errors)
    union = document["components"]["schemas"]["WebhookEvent"]
    assert set(union["discriminator"]["mapping"]) == set(document["webhooks"])


def test_operations_that_need_no_key_say_so() -> None:
    document = openapi_document()
    public = set()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            keyed = any(status == 401 for status, _ in documented_codes(operation))
            assert operation["security"] == ([{"HTTPBearer": []}] if keyed else []), (method, path)
            public |= set() if keyed else {f"{method.upper()} {path}"}
    assert public == {
        "GET /healthz",
        "GET /readyz",
        "GET /metrics",
        "GET /v1/fairness/keys",
        "GET /v1/fairness/proofs/{token}",
        "GET /verify",
        "GET /v1/logs/{tenant_id}/checkpoint",
        "GET /v1/logs/{tenant_id}/checkpoints/{tree_size}",
        "GET /v1/logs/{tenant_id}/games/{game_id}/inclusion",
        "GET /v1/logs/{tenant_id}/consistency",
    }
    assert all(item["post"]["security"] == [] for item in document["webhooks"].values())


def test_each_problem_response_lists_its_codes_and_types_their_members() -> None:
    document = openapi_document()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for response in operation["responses"].values():
                content = response.get("content", {}).get("application/problem+json")
                if content is None:
                    continue
                narrowed = content["schema"]["allOf"][1]
                assert narrowed["properties"]["code"]["enum"] == sorted(content["examples"]), (method, path)
    act = document["paths"]["/v1/games/{game_id}/actions"]["post"]["responses"]["409"]
    members = act["content"]["application/problem+json"]["schema"]["allOf"][1]["properties"]
    assert members["game"]["$ref"] == "#/components/schemas/GameOut"
    withdraw = document["paths"]["/v1/accounts/{account_id}/withdrawals"]["post"]["responses"]["409"]
    members = withdraw["content"]["application/problem+json"]["schema"]["allOf"][1]["properties"]
    assert members["balance"] == {"type": "integer", "description": "The account's balance, minor units."}


def test_answers_document_the_headers_they_carry() -> None:
    document = openapi_document()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            keyed = any(
                parameter["name"] == "Idempotency-Key" for parameter in operation.get("parameters", [])
            )
            for status, response in operation["responses"].items():
                headers = response["headers"]
                assert {"X-Request-ID", "RateLimit", "RateLimit-Policy"} <= set(headers), (method, path)
                assert ("Idempotent-Replayed" in headers) == (keyed and status.startswith("2")), (
                    method,
                    path,
                )
                if status in ("429", "503"):
                    assert "Retry-After" in headers, (method, path, status)
