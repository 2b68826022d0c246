"""Which problems each operation can answer, declared next to its route: `responses=problems(...)`.

Every problem here is built from the error that raises it (its status, code and title), so the document
cannot name a code the service does not have. `EVERY_OPERATION` is what any request may meet whatever the
route (an unexpected failure); other parts of the service add theirs to it (rate limits, a database
outage) and every operation documents them. tests/api/test_documented_problems.py produces each
documented problem over HTTP, and the `client` fixture fails a test whose request met an undocumented one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pokna.dealer.errors import REFUSAL_STATUS, ClientSeedLocked, NotSeated, RoundInProgress, VersionConflict
from pokna.errors import (
    Forbidden,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    IdempotencyRequestInProgress,
    InvalidRequest,
    NotFound,
    PoknaError,
    Unauthorized,
)
from pokna.ledger import AccountExists, AccountNotFound, InsufficientFunds
from pokna.webhooks.errors import DeliveryInFlight, DeliveryNotFound, EndpointNotFound, UnsafeWebhookUrl

PROBLEM_JSON = "application/problem+json"
PROBLEM_SCHEMA_REF = "#/components/schemas/Problem"


@dataclass(frozen=True)
class ProblemDoc:
    """One problem an operation can answer, with an example `detail` for the document."""

    status: int
    code: str
    title: str
    detail: str

    def example(self) -> dict[str, Any]:
        return {
            "type": f"https://pokna.dev/problems/{self.code}",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
            "instance": "/v1/...",
            "request_id": "3f2a9c0e5b7d4e1f8a6b2c9d0e1f2a3b",
        }


def of(error: type[PoknaError], detail: str) -> ProblemDoc:
    return ProblemDoc(error.status, error.code, error.title, detail)


def refusal(code: str, detail: str) -> ProblemDoc:
    """A refusal by the rules of the game (pokna.dealer.errors.ActionRefused), by its stable code."""
    return ProblemDoc(REFUSAL_STATUS[code], code, "Action refused by the rules", detail)


# Raised outside any route's code: the framework, the middleware and the error handlers.
MALFORMED_JSON = ProblemDoc(400, "malformed_json", "Malformed JSON", "The request body is not valid JSON.")
VALIDATION = ProblemDoc(
    422, "validation_error", "Request validation failed", "body.stake: Input should be > 0"
)
PAYLOAD_TOO_LARGE = ProblemDoc(
    413, "payload_too_large", "Payload too large", "Request bodies are limited to 65536 bytes."
)
INTERNAL_ERROR = ProblemDoc(
    500,
    "internal_error",
    "Internal server error",
    "An unexpected error occurred; nothing was committed. Quote the request id when reporting it.",
)
REQUEST_TIMEOUT = ProblemDoc(
    408,
    "request_timeout",
    "Request timeout",
    "The request's body did not arrive within 30 s; nothing was done.",
)
DATABASE_UNAVAILABLE = ProblemDoc(
    503, "database_unavailable", "Database unavailable", "cannot reach the database: OperationalError"
)
SCHEMA_OUT_OF_DATE = ProblemDoc(
    503,
    "schema_out_of_date",
    "Schema out of date",
    "database schema is at 0005, the code needs 0006; run `pokna db upgrade`",
)

DUPLICATE_KEY = ProblemDoc(
    400,
    "duplicate_key",
    "Duplicate key in JSON body",
    "`amount` appears more than once in the body (at /amount); send each key once",
)
TOO_MANY_REQUESTS = ProblemDoc(
    429, "too_many_requests", "Too many requests", "this API key is over its rate limit; retry in 1 s"
)

EVERY_OPERATION: list[ProblemDoc] = [INTERNAL_ERROR, PAYLOAD_TOO_LARGE, REQUEST_TIMEOUT, TOO_MANY_REQUESTS]
"""Problems any request can meet, whatever the route: add to this list, never per route."""

STORED = (DATABASE_UNAVAILABLE,)
"""An operation that reads or writes the database: an outage answers 503 (`pokna.db.outage`)."""

BY_MECHANISM: list[ProblemDoc] = [*EVERY_OPERATION, DATABASE_UNAVAILABLE, DUPLICATE_KEY, TOO_MANY_REQUESTS]
"""Problems answered by one mechanism around every operation that has it (the handlers, an outage, the
duplicate-key reader, the rate limiter) rather than by the route's own code: each is produced by that
mechanism's own tests, across operations, rather than once per operation."""

RETRIED_LATER = {"too_many_requests", "database_unavailable", "idempotency_request_in_progress"}
"""The problems answered with `Retry-After`: the same request may succeed once it has waited."""
RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before sending the same request again (with the same "
        "Idempotency-Key): nothing was committed.",
        "schema": {"type": "integer"},
    }
}

UNAUTHORIZED = of(Unauthorized, "unknown or revoked API key")
METRICS_NOT_ALLOWED = of(Forbidden, "/metrics answers only the addresses of POKNA_METRICS_ALLOWED_NETWORKS")
KEYED = (UNAUTHORIZED, TOO_MANY_REQUESTS, DATABASE_UNAVAILABLE)
"""An operation behind an API key: the key is checked in the database, and each key has a rate limit (any
request has one: per key, or per client address without a known key)."""
GAME_NOT_FOUND = of(NotFound, "no game game_0c1d2e3f")
TABLE_NOT_FOUND = of(NotFound, "no table tbl_0c1d2e3f")
LINK_NOT_FOUND = of(NotFound, "no such fairness link")
ACCOUNT_NOT_FOUND = of(AccountNotFound, "no account acct_0c1d2e3f")
ACCOUNT_EXISTS = of(AccountExists, "tenant ten_0c1d already has a player_wallet account for 'user-42'")
INSUFFICIENT_FUNDS = of(
    InsufficientFunds, "account acct_0c1d holds 5; a change of -10 would take it below zero"
)
NOT_A_WALLET = of(InvalidRequest, "deposits go to player wallets, not a house")
BAD_CURSOR = of(InvalidRequest, "not a cursor from this list")
BAD_SEATING = of(InvalidRequest, "account acct_0c1d already sits at body.vigo_account_id")
NOT_SEATED = of(NotSeated, "account acct_0c1d has no seat in this game")
VERSION_CONFLICT = of(VersionConflict, "expected version 7, the game is at 8")
CLIENT_SEED_LOCKED = of(ClientSeedLocked, "client seeds can be set only before the game starts")
ROUND_IN_PROGRESS = of(RoundInProgress, "round 3 (game_0c1d) has not ended")
ACTION_REFUSALS = (
    refusal("wrong_phase", "vote is not allowed while the game is seeking"),
    refusal("not_your_turn", "seat 1 may not act now; waiting on [2]"),
    refusal("already_voted", "seat 1 has already voted on this pass"),
    refusal("game_over", "the game is settled; no further actions"),
    refusal("cannot_pay", "seats [3] cannot pay 10"),
    refusal("challenge_unaffordable", "seat 1 cannot match a challenge raise of 10"),
)

BAD_RANGE = of(InvalidRequest, "give from_seq or from_time, not both")
ENDPOINT_NOT_FOUND = of(EndpointNotFound, "no webhook endpoint whep_0c1d2e3f")
DELIVERY_NOT_FOUND = of(DeliveryNotFound, "no delivery whdl_0c1d2e3f of webhook endpoint whep_0c1d2e3f")
DELIVERY_IN_FLIGHT = of(
    DeliveryInFlight, "delivery whdl_0c1d2e3f is being attempted; ask again once it is done"
)
UNSAFE_WEBHOOK_URL = of(UnsafeWebhookUrl, "webhook URLs must be https in production")

JSON_BODY = (MALFORMED_JSON, DUPLICATE_KEY, VALIDATION)
"""An operation that reads a JSON body: it may be unreadable or not fit the schema."""
IDEMPOTENT = (
    VALIDATION,
    DUPLICATE_KEY,
    of(IdempotencyKeyReused, "this Idempotency-Key was used with a different request"),
    of(IdempotencyRequestInProgress, "the first request with this key is still being processed"),
)
"""An operation that takes an `Idempotency-Key` (a write: any JSON sent with it is read for repeated
keys, even where the operation takes no body)."""
KEY_REQUIRED = of(
    IdempotencyKeyRequired,
    "this request moves money: send an Idempotency-Key header (1-255 printable ASCII characters, a new one "
    "for each request and the same one on its retries), so that a retry after a lost answer cannot move "
    "the money twice",
)
"""An operation that moves money: it refuses a request without an `Idempotency-Key`."""


def problems(*documented: ProblemDoc | tuple[ProblemDoc, ...]) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses=` entries for these problems and `EVERY_OPERATION`'s: one entry per status,
    one example per code, every one `application/problem+json` with the `Problem` schema."""
    flat: list[ProblemDoc] = []
    for item in (*documented, *EVERY_OPERATION):
        for doc in item if isinstance(item, tuple) else (item,):
            if all(doc.code != seen.code or doc.status != seen.status for seen in flat):
                flat.append(doc)
    responses: dict[int | str, dict[str, Any]] = {}
    for status in sorted({doc.status for doc in flat}):
        docs = [doc for doc in flat if doc.status == status]
        responses[status] = {
            "description": "; ".join(f"`{doc.code}`: {doc.title}" for doc in docs),
            **({"headers": RETRY_AFTER} if any(doc.code in RETRIED_LATER for doc in docs) else {}),
            "content": {
                PROBLEM_JSON: {
                    "schema": {"$ref": PROBLEM_SCHEMA_REF},
                    "examples": {doc.code: {"summary": doc.title, "value": doc.example()} for doc in docs},
                }
            },
        }
    return responses


def documented_codes(operation: dict[str, Any]) -> set[tuple[int, str]]:
    """(status, code) of every problem an operation of the OpenAPI document declares."""
    found: set[tuple[int, str]] = set()
    for status, response in operation.get("responses", {}).items():
        examples = response.get("content", {}).get(PROBLEM_JSON, {}).get("examples", {})
        found.update((int(status), example["value"]["code"]) for example in examples.values())
    return found
