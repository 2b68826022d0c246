"""Which problems each operation can answer, declared next to its route: `responses=problems(...)`.

This module is the mechanism and the problems of the HTTP kernel (bodies, keys, idempotency, paging); each
domain declares its own beside its routes (pokna.dealer.problem_docs, pokna.ledger.problem_docs,
pokna.webhooks.problem_docs).

Every problem here is built from the error that raises it (its status, code and title), so the document
cannot name a code the service does not have. `EVERY_OPERATION` is what any request may meet whatever the
route (an unexpected failure); other parts of the service add theirs to it (rate limits, a database
outage) and every operation documents them. tests/api/test_documented_problems.py produces each
documented problem over HTTP, and the `client` fixture fails a test whose request met an undocumented one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pokna.api.asgi_problems import problem_document
from pokna.api.idempotency import key_required
from pokna.errors import (
    Forbidden,
    IdempotencyKeyRequired,
    IdempotencyKeyReused,
    IdempotencyRequestInProgress,
    InvalidRequest,
    PoknaError,
    Unauthorized,
)

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
        request_id = "3f2a9c0e5b7d4e1f8a6b2c9d0e1f2a3b"
        return problem_document(
            status=self.status,
            code=self.code,
            title=self.title,
            detail=self.detail,
            instance="/v1/...",
            request_id=request_id,
            extensions={},
        )


def of(error: type[PoknaError], detail: str) -> ProblemDoc:
    return ProblemDoc(error.status, error.code, error.title, detail)


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
"""An operation that reads or writes the database: an outage answers 503 (`pokna.db.sqlstates`)."""

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
BAD_CURSOR = of(InvalidRequest, "not a cursor from this list")

BAD_RANGE = of(InvalidRequest, "give from_seq or from_time, not both")

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
KEY_REQUIRED = of(IdempotencyKeyRequired, key_required().detail)
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
