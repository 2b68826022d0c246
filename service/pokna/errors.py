"""Typed domain errors. Each has a stable `code`; one handler turns any of them into problem+json."""

from __future__ import annotations

from typing import Any, ClassVar


class PoknaError(Exception):
    # Plain attributes (not ClassVar) so an error translated from elsewhere can carry its own code.
    code: str = "error"
    status: int = 400
    title: str = "Request failed"
    headers: ClassVar[dict[str, str]] = {}

    def __init__(self, detail: str, **extensions: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extensions = extensions


class NotFound(PoknaError):
    code = "not_found"
    status = 404
    title = "Not found"


class Conflict(PoknaError):
    code = "conflict"
    status = 409
    title = "Conflict"


class Unauthorized(PoknaError):
    code = "unauthorized"
    status = 401
    title = "Unauthorized"
    headers: ClassVar[dict[str, str]] = {"WWW-Authenticate": "Bearer"}


class Forbidden(PoknaError):
    code = "forbidden"
    status = 403
    title = "Forbidden"


class InvalidRequest(PoknaError):
    """Input that passed the schema but not the rules of the service; `field` names the culprit."""

    code = "invalid_request"
    status = 422
    title = "Invalid request"

    def __init__(self, detail: str, *, field: str, **extensions: Any) -> None:
        pointer = "/" + "/".join(field.split(".")[1:]) if "." in field else ""
        super().__init__(
            detail, invalid_params=[{"name": field, "reason": detail, "pointer": pointer}], **extensions
        )


class IdempotencyKeyReused(PoknaError):
    code = "idempotency_key_reused"
    status = 422
    title = "Idempotency key reused with a different request"


class IdempotencyKeyRequired(PoknaError):
    """A write that moves money came without an `Idempotency-Key`: without one, a retry after a lost
    answer would move the money again. 400, as the IETF's Idempotency-Key draft asks of a required key."""

    code = "idempotency_key_required"
    status = 400
    title = "Idempotency-Key required"

    def __init__(self, detail: str) -> None:
        super().__init__(
            detail,
            invalid_params=[
                {"name": "header.Idempotency-Key", "reason": "required", "pointer": "/Idempotency-Key"}
            ],
        )


class IdempotencyRequestInProgress(PoknaError):
    code = "idempotency_request_in_progress"
    status = 409
    title = "A request with this idempotency key is still being processed"
    # The first request holds its claim for as long as it runs, milliseconds as a rule: retry soon.
    headers: ClassVar[dict[str, str]] = {"Retry-After": "1"}


class DatabaseUnavailable(PoknaError):
    """The database cannot serve the request now (down, restarting, read-only, out of connections):
    nothing was committed, and the same request may be retried, with its Idempotency-Key, after
    `Retry-After` seconds."""

    code = "database_unavailable"
    status = 503
    title = "Database unavailable"


class WalletHeld(Conflict):
    """Money would leave a wallet that a beacon-mode game's accepted roll holds until it resolves (the
    database refuses it: `pokna.db.sqlstates.WALLET_HELD`, service/pokna/sql/ledger_refuse_held_debit.sql)."""

    code = "wallet_held"
    title = "The wallet is held by a waiting beacon roll"
