"""What FastAPI leaves out of the OpenAPI document and the tools of an outside team need (issue 26).

Spectral (`spectral:oas`), Redocly (`recommended`), openapi-typescript and openapi-python-client take the
document as it is (tests/test_openapi_outside_tools.py). For them this adds, after FastAPI has built it:
- `security: []` on every operation and webhook that needs no API key (FastAPI says nothing, which reads
  as "unspecified", a Redocly error);
- the union of every webhook body, `WebhookEvent`, discriminated by `type`, for a receiver to parse into;
- each webhook's example as written (FastAPI drops its nulls, which left required fields out);
- the response headers the edge adds to every answer (request id, rate limits), and `Idempotent-Replayed`
  on the successes of every operation that takes an `Idempotency-Key`;
- for each problem response, the `code`s it can carry as an enum, with the extension members those codes
  carry typed (a refused action's `game`, a refused withdrawal's balance).
"""

from __future__ import annotations

import copy
from typing import Any

from pokna.api.idempotency import KEY_HEADER
from pokna.api.problem_docs import PROBLEM_JSON
from pokna.outbox.events import WebhookEvent

COMPONENTS = "#/components/schemas/{model}"

EDGE_HEADERS: dict[str, dict[str, Any]] = {
    "X-Request-ID": {
        "description": "The request's id: the one sent (if sane) or a new one. Every log line of the request "
        "and a problem's `request_id` carry it.",
        "schema": {"type": "string"},
    },
    "RateLimit-Policy": {
        "description": 'The quota of this client\'s bucket (IETF draft "RateLimit header fields for HTTP"): '
        '`"per-key";q=<burst>;w=<seconds to refill>`, or `"per-client"` without a known API key.',
        "schema": {"type": "string"},
        "example": '"per-key";q=120;w=60',
    },
    "RateLimit": {
        "description": "What is left of it: `r` requests now, `t` seconds until the bucket is full again.",
        "schema": {"type": "string"},
        "example": '"per-key";r=119;t=1',
    },
}
REPLAYED_HEADER = {
    "Idempotent-Replayed": {
        "description": "`true` when this is the stored answer to an earlier request with the same "
        "Idempotency-Key (nothing was done again); absent on the first answer.",
        "schema": {"type": "string", "enum": ["true"]},
    }
}

_GAME: dict[str, Any] = {"$ref": COMPONENTS.format(model="GameOut"), "description": "The game as it is now."}
_SEAT: dict[str, Any] = {"type": "integer", "description": "The seat the refusal is about."}
_SEATS: dict[str, Any] = {"type": "array", "items": {"type": "integer"}}
_PHASE: dict[str, Any] = {"$ref": COMPONENTS.format(model="Phase")}
_TIMED_OUT: dict[str, Any] = {
    "type": "array",
    "description": "Deadlines that passed before the action arrived and were applied first.",
    "items": {
        "type": "object",
        "properties": {
            "applied": {"type": "string", "description": "The default action applied."},
            "account_ids": {"type": "array", "items": {"type": "string"}},
            "deadline_at": {"type": "string", "format": "date-time"},
        },
        "additionalProperties": {"description": "Further facts of the deadline."},
    },
}
_REFUSAL: dict[str, dict[str, Any]] = {"game": _GAME, "timed_out": _TIMED_OUT}
MEMBERS: dict[str, dict[str, dict[str, Any]]] = {
    "wrong_phase": {**_REFUSAL, "phase": _PHASE, "action": {"type": "string"}},
    "not_your_turn": {
        **_REFUSAL,
        "seat": _SEAT,
        "expected": {**_SEATS, "description": "Seats that may act."},
    },
    "already_voted": {**_REFUSAL, "seat": _SEAT},
    "game_over": {**_REFUSAL, "phase": _PHASE},
    "cannot_pay": {
        **_REFUSAL,
        "seats": {**_SEATS, "description": "Seats short of `amount`."},
        "amount": {"type": "integer"},
    },
    "challenge_unaffordable": {**_REFUSAL, "seat": _SEAT, "amount": {"type": "integer"}},
    "conflict": {"game": _GAME},
    "insufficient_funds": {
        "account_id": {"type": "string"},
        "balance": {"type": "integer", "description": "The account's balance, minor units."},
        "change": {"type": "integer", "description": "The change refused, minor units (negative: out)."},
    },
}
"""Each problem code's extension members beyond `Problem`'s own, as the errors raising it carry them."""


def add_details(document: dict[str, Any]) -> None:
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    components["headers"] = copy.deepcopy({**EDGE_HEADERS, **REPLAYED_HEADER})
    _add_webhook_union(schemas)
    for item in document.get("paths", {}).values():
        for operation in item.values():
            operation.setdefault("security", [])
            _add_headers(operation)
            _narrow_problems(operation)
    for item in document.get("webhooks", {}).values():
        for operation in item.values():
            operation["security"] = []


def restore_webhook_examples(document: dict[str, Any], examples: dict[str, dict[str, Any]]) -> None:
    """Each webhook's example as written: FastAPI dropped its nulls (`table_id`, `reference`)."""
    for event_type, item in document.get("webhooks", {}).items():
        body = item["post"]["requestBody"]["content"]["application/json"]
        body["example"] = {**body["example"], "data": copy.deepcopy(examples[event_type])}


def _add_webhook_union(schemas: dict[str, Any]) -> None:
    union = WebhookEvent.model_json_schema(ref_template=COMPONENTS)
    for name, definition in union.pop("$defs", {}).items():
        schemas.setdefault(name, definition)
    union["description"] = (WebhookEvent.__doc__ or "").strip()
    schemas["WebhookEvent"] = union


def _add_headers(operation: dict[str, Any]) -> None:
    keyed = any(parameter.get("name") == KEY_HEADER for parameter in operation.get("parameters", []))
    for status, response in operation.get("responses", {}).items():
        headers = response.setdefault("headers", {})
        for name in EDGE_HEADERS:
            headers[name] = {"$ref": f"#/components/headers/{name}"}
        if keyed and status.startswith("2"):
            headers["Idempotent-Replayed"] = {"$ref": "#/components/headers/Idempotent-Replayed"}


def _narrow_problems(operation: dict[str, Any]) -> None:
    for response in operation.get("responses", {}).values():
        content = response.get("content", {}).get(PROBLEM_JSON)
        if content is None:
            continue
        codes = sorted({example["value"]["code"] for example in content["examples"].values()})
        members: dict[str, Any] = {}
        for code in codes:
            for name, schema in MEMBERS.get(code, {}).items():
                members.setdefault(name, schema)
        narrowed: dict[str, Any] = {
            "type": "object",
            "required": ["code"],
            "properties": {
                "code": {"type": "string", "enum": codes, "description": "Which problem: one of these here."},
                **copy.deepcopy(members),
            },
        }
        content["schema"] = {"allOf": [content["schema"], narrowed]}
