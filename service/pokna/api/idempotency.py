"""`Idempotency-Key` on POSTs: the HTTP side of `pokna.idempotency`.

This module reads the header, fingerprints the request (method, path and the body's JSON with its keys
sorted, so a retry spelled differently is the same request) and shapes the response; what a claim is, when
it is committed and when it is released is `pokna.idempotency.service`'s to decide (its docstring states
the guarantees). The hot paths (a game's creation and actions, deposits and withdrawals) claim the key
themselves on the driver (`get_sent_key`); the other keyed routes hand their work to `Idempotency.run`.

Their work runs on the request's ORM session (`SessionDep`), in the thread pool, as the route does: it is
the webhook endpoints' writes (the other admin writes are on the driver: pokna.api.keyed_writes), written through
the domains' ORM services that the CLI and the tests call too. The claim and its release are the driver's,
the same statements as the hot paths' (run on the event loop, from the route's thread, on a connection of
the runtime's pool): the claim is autocommit there, visible to a retry before the work starts. The hold and
the stored answer go through the session, in the work's own transaction.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, TypeVar

import psycopg
from anyio import from_thread
from fastapi import Depends, Header, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, BaseModel, TypeAdapter, WithJsonSchema
from pydantic_core import PydanticCustomError
from sqlalchemy.orm import Session

from pokna.api.auth import TenantDep
from pokna.api.deps import SessionDep
from pokna.api.encoding import json_ready
from pokna.db.aio import AsyncDatabase
from pokna.db.types import utc_now
from pokna.errors import IdempotencyKeyRequired
from pokna.idempotency import service as idempotency

REPLAYED_HEADER = "Idempotent-Replayed"
KEY_HEADER = "Idempotency-Key"
log = logging.getLogger("pokna.idempotency")
MAX_KEY_LENGTH = 255

_KEY = r"[!-~](?:[ -~]{0,253}[!-~])?"
IDEMPOTENCY_KEY_PATTERN = rf'^(?:{_KEY}|"{_KEY}")$'
"""1-255 printable ASCII characters, not starting or ending with a space, optionally in double quotes:
exactly what is accepted (`key_problem` says the same in words)."""


def key_problem(sent: str) -> str | None:
    """What is wrong with an `Idempotency-Key` as sent, in words; None for a key the pattern accepts.

    The header is checked here rather than by a `pattern` on the parameter: pydantic words a pattern's
    refusal as the regular expression itself, which tells a client nothing about what to send."""
    quoted = len(sent) > 2 and sent[0] == sent[-1] == '"'
    if _fits(sent) or (quoted and _fits(sent[1:-1])):
        return None
    key = sent[1:-1] if quoted else sent
    if not key:
        return f"an {KEY_HEADER} is 1-{MAX_KEY_LENGTH} printable ASCII characters; this one is empty"
    if len(key) > MAX_KEY_LENGTH:
        return f"an {KEY_HEADER} is at most {MAX_KEY_LENGTH} characters; this one has {len(key)}"
    for position, character in enumerate(key):
        if not " " <= character <= "~":
            return (
                f"an {KEY_HEADER} holds printable ASCII characters only (space to `~`); this one has "
                f"U+{ord(character):04X} at position {position}"
            )
    return f"an {KEY_HEADER} may not start or end with a space"


def _fits(key: str) -> bool:
    return (
        0 < len(key) <= MAX_KEY_LENGTH
        and all(" " <= character <= "~" for character in key)
        and key[0] != " "
        and key[-1] != " "
    )


def _checked_key(sent: str) -> str:
    if (problem := key_problem(sent)) is not None:
        raise PydanticCustomError("idempotency_key", problem)
    return sent


IdempotencyKey = Annotated[
    str,
    AfterValidator(_checked_key),
    WithJsonSchema({"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN}),
]
"""The header's value, refused in words (`key_problem`); documented by its pattern."""

_KEY_DESCRIPTION = (
    "Makes the POST safe to retry: a retry with the same key and body returns the stored response and does "
    "nothing more. 1-255 printable ASCII characters, not starting or ending with a space; a key sent in "
    'double quotes is the same key unquoted, and an empty or blank one (`""`) is refused.'
)
_KEY_EXAMPLE = "order-7f3c2a"

Answer = TypeVar("Answer", bound=BaseModel)
Work = Callable[[Session], tuple[int, Answer]]
"""The request's effects on the session; returns the status and the documented answer."""


class Idempotency:
    def __init__(
        self,
        session: Session,
        database: AsyncDatabase,
        tenant_id: str,
        key: str | None,
        fingerprint: str,
        response: Response,
    ) -> None:
        self.session = session
        self.database = database
        self.tenant_id = tenant_id
        self.key = key
        self.fingerprint = fingerprint
        self.response = response
        self.interrupted_at: datetime | None = None
        """Set before the work runs: when an earlier attempt under this key began that the service
        failed to finish (`pokna.idempotency.service.held_claim`)."""

    def run(self, work: Work[Answer], answer: type[Answer]) -> Answer:
        """The answer, as the route's documented model: the first time as the work built it, on a replay
        as stored, read back into the same model (so a replay is checked against the document too).

        Called from the route's thread (a plain `def` route), before the work touches the session; it
        commits the session itself: the answer is stored in the work's transaction."""
        if self.key is None:
            status, body = work(self.session)  # `SessionDep` commits before sending
            self.response.status_code = status
            return body
        token, started_at = secrets.token_hex(16), utc_now()
        stored = from_thread.run(self._claim, self.key, token, started_at)
        if stored is not None:
            self.response.status_code = stored.status
            self.response.headers[REPLAYED_HEADER] = "true"
            return answer.model_validate_json(stored.body)
        params = {"tenant_id": self.tenant_id, "key": self.key}
        try:
            held = self.session.connection().exec_driver_sql(idempotency.HOLD, params).first()
            first_at = idempotency.held_claim(None if held is None else (held[0], held[1]), token)
            self.interrupted_at = first_at if first_at < started_at else None
            status, body = work(self.session)
            # ASCII-escaped JSON, so any text the body holds (even NUL) fits a PostgreSQL text column.
            encoded = json.dumps(json_ready(body), separators=(",", ":"))
            stored_params = {**params, "status": status, "body": encoded}
            self.session.connection().exec_driver_sql(idempotency.STORE_RESPONSE, stored_params)
            self.session.commit()
        except BaseException:
            self.session.rollback()  # first: the release waits for no lock of ours
            from_thread.run(self._release, self.key, token)
            raise
        self.response.status_code = status
        return body

    async def _claim(self, key: str, token: str, now: datetime) -> idempotency.Answer | None:
        async with self.database.connection() as connection:
            claimed = await idempotency.authenticate_and_claim(
                connection, None, self.tenant_id, key, self.fingerprint, token, now
            )
        return claimed.stored

    async def _release(self, key: str, token: str) -> None:
        """The work's own error is what the caller must see: should the database be unreachable for the
        release too, the claim stays unfinished and unlocked, and a retry takes it over."""
        try:
            async with self.database.connection() as connection:
                await idempotency.release(connection, self.tenant_id, key, token)
        except psycopg.Error as error:  # not its text: it may carry the statement's parameters
            log.warning("could not release idempotency key %r (%s)", key, type(error).__name__)


def _unquoted(key: str | None) -> str | None:
    """A key sent quoted (`"abc"`) is the same key as `abc`; the header's schema already checked it."""
    if key is not None and len(key) > 2 and key[0] == key[-1] == '"':
        return key[1:-1]
    return key


async def get_idempotency(
    request: Request,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    idempotency_key: Annotated[
        IdempotencyKey | None,
        Header(alias=KEY_HEADER, description=_KEY_DESCRIPTION, examples=[_KEY_EXAMPLE]),
    ] = None,
) -> Idempotency:
    sent = await get_sent_key(request, idempotency_key)
    key, fingerprint = (None, "") if sent is None else (sent.key, sent.fingerprint)
    return Idempotency(session, request.app.state.runtime.aio, tenant_id, key, fingerprint, response)


@dataclass(frozen=True)
class SentKey:
    key: str
    """Unquoted."""
    fingerprint: str


async def get_sent_key(
    request: Request,
    idempotency_key: Annotated[
        IdempotencyKey | None,
        Header(alias=KEY_HEADER, description=_KEY_DESCRIPTION, examples=[_KEY_EXAMPLE]),
    ] = None,
) -> SentKey | None:
    """The request's key and fingerprint, or None without a key: for the async paths, which claim the key
    themselves (pokna.idempotency.service), and for `get_idempotency`."""
    key = _unquoted(idempotency_key)
    if key is None:
        return None
    if not key.strip(' "'):
        # `""` or `" "` fit the header's pattern as keys of their own, but mean none: refused like any
        # other key the pattern refuses, naming the header.
        raise RequestValidationError(
            [
                {
                    "type": "string_pattern_mismatch",
                    "loc": ("header", "Idempotency-Key"),
                    "msg": "an empty or blank key; send 1-255 printable ASCII characters",
                    "input": idempotency_key,
                }
            ]
        )
    # Only a keyed request is ever compared with another; FastAPI has already read (and cached) the body.
    return SentKey(key, request_fingerprint(request.method, request.url.path, await request.body()))


SentKeyDep = Annotated[SentKey | None, Depends(get_sent_key)]


async def get_sent_key_required_by_route(
    request: Request,
    idempotency_key: Annotated[
        IdempotencyKey | None, Header(alias=KEY_HEADER, include_in_schema=False)
    ] = None,
) -> SentKey | None:
    """`get_sent_key` for a route that requires the key and refuses its absence itself, after checking
    the API key (a request with neither is a 401, as everywhere): documented as required by the route's
    `openapi_extra=REQUIRED_KEY_EXTRA`."""
    return await get_sent_key(request, idempotency_key)


RequiredSentKeyDep = Annotated[SentKey | None, Depends(get_sent_key_required_by_route)]


def key_required() -> IdempotencyKeyRequired:
    return IdempotencyKeyRequired(
        f"this request moves money: send an {KEY_HEADER} header (1-{MAX_KEY_LENGTH} printable ASCII "
        "characters, a new one for each request and the same one on its retries), so that a retry "
        "after a lost answer cannot move the money twice"
    )


def request_fingerprint(method: str, path: str, raw_body: bytes) -> str:
    """What tells a retry of the same request from another request under the same key."""
    try:
        canonical = (
            json.dumps(json.loads(raw_body), sort_keys=True, separators=(",", ":")).encode()
            if raw_body
            else b""
        )
    except ValueError:
        canonical = raw_body
    return hashlib.sha256(method.encode() + b" " + path.encode() + b"\n" + canonical).hexdigest()


IdempotencyDep = Annotated[Idempotency, Depends(get_idempotency)]


REQUIRED_KEY_EXTRA: dict[str, Any] = {
    "parameters": [
        {
            "name": KEY_HEADER,
            "in": "header",
            "required": True,
            "description": _KEY_DESCRIPTION + " Required here: this request moves money.",
            "schema": {
                **TypeAdapter(IdempotencyKey).json_schema(),
                "description": _KEY_DESCRIPTION,
                "examples": [_KEY_EXAMPLE],
                "title": KEY_HEADER,
            },
        }
    ]
}
"""The `openapi_extra` of a route with `RequiredIdempotencyDep`: its key, documented as required."""
