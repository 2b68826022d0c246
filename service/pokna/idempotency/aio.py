"""Exactly-once requests on the async hot path: the same records, claims and guarantees as
pokna.idempotency.service (its docstring states them), as driver statements on a psycopg connection.

What changes is only the number of round trips. The claim is made by the request's first statement,
which also authenticates its API key (`authenticate_and_claim`, autocommit: the claim must be visible to a
retry before the work is done); the hold is pipelined with the work's first read; the stored answer is
written by the work's own last call (pokna.dealer.writes), before its COMMIT. A key seen before takes the
slow path of the synchronous service, statement for statement (`claim_existing`).

`authenticate_and_claim` reads the tenants' `api_key` table: the one statement that both authenticates
and claims is the point (one round trip fewer on every keyed request).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import AsyncConnection

from pokna.errors import IdempotencyKeyReused, IdempotencyRequestInProgress, Unauthorized
from pokna.idempotency.service import IN_PROGRESS, RETENTION, KeyedRequest, Outcome

_CLAIM_ATTEMPTS = 3
_LOCK_NOT_AVAILABLE = "55P03"

AUTHENTICATE = "SELECT tenant_id FROM api_key WHERE secret_sha256 = %(secret_sha256)s AND revoked_at IS NULL"

_AUTHENTICATE_AND_CLAIM = (
    "WITH caller AS (" + AUTHENTICATE + "), "  # noqa: S608 (constant text, every value bound)
    "claimed AS (INSERT INTO idempotency_record "
    "(tenant_id, key, request_fingerprint, claim_token, created_at, expires_at) "
    "SELECT tenant_id, %(key)s, %(fingerprint)s, %(token)s, %(now)s, %(expires_at)s FROM caller "
    "ON CONFLICT (tenant_id, key) DO NOTHING RETURNING key) "
    # A key seen before (committed before this statement began): its record, so that a replay of a
    # stored answer needs no second round trip.
    "SELECT caller.tenant_id, EXISTS (SELECT 1 FROM claimed), seen.request_fingerprint, seen.response_status, "
    "seen.response_body, seen.expires_at FROM caller LEFT JOIN idempotency_record AS seen "
    "ON seen.tenant_id = caller.tenant_id AND seen.key = %(key)s"
)
_CLAIM_FOR_TENANT = _AUTHENTICATE_AND_CLAIM.replace(  # a command or a test, whose tenant is known
    AUTHENTICATE, "SELECT %(tenant_id)s::text AS tenant_id"
)
_INSERT_CLAIM = (
    "INSERT INTO idempotency_record (tenant_id, key, request_fingerprint, claim_token, created_at, expires_at) "
    "VALUES (%(tenant_id)s, %(key)s, %(fingerprint)s, %(token)s, %(now)s, %(expires_at)s) "
    "ON CONFLICT (tenant_id, key) DO NOTHING RETURNING key"
)
_LOCKED_RECORD = (
    "SELECT request_fingerprint, response_status, response_body, expires_at FROM idempotency_record "
    "WHERE tenant_id = %(tenant_id)s AND key = %(key)s FOR UPDATE NOWAIT"
)
_DELETE_RECORD = "DELETE FROM idempotency_record WHERE tenant_id = %(tenant_id)s AND key = %(key)s"
_TAKE_OVER = (
    "UPDATE idempotency_record SET claim_token = %(token)s, locked_until = NULL "
    "WHERE tenant_id = %(tenant_id)s AND key = %(key)s"
)
HOLD = (
    "SELECT claim_token, created_at FROM idempotency_record "
    "WHERE tenant_id = %(tenant_id)s AND key = %(key)s FOR UPDATE"
)
_RELEASE = (
    "DELETE FROM idempotency_record WHERE tenant_id = %(tenant_id)s AND key = %(key)s "
    "AND claim_token = %(token)s AND response_status IS NULL"
)


@dataclass(frozen=True)
class Claimed:
    tenant_id: str
    stored: Outcome | None
    """The outcome of the time this request already ran (replay it), or None: the key is ours."""


def claim_values(key: str, fingerprint: str, token: str, now: datetime) -> dict[str, Any]:
    return {"key": key, "fingerprint": fingerprint, "token": token, "now": now, "expires_at": now + RETENTION}


async def authenticate_and_claim(
    connection: AsyncConnection[Any],
    secret_sha256: str | None,
    tenant_id: str | None,
    key: str,
    fingerprint: str,
    token: str,
    now: datetime,
) -> Claimed:
    """One statement, autocommit: the caller's tenant (by its API key's digest, unless already known),
    and the key claimed for `token` (or its record)."""
    values = {
        **claim_values(key, fingerprint, token, now),
        "secret_sha256": secret_sha256,
        "tenant_id": tenant_id,
    }
    statement = _AUTHENTICATE_AND_CLAIM if tenant_id is None else _CLAIM_FOR_TENANT
    row = await (await connection.execute(statement, values)).fetchone()
    if row is None:
        raise Unauthorized("unknown or revoked API key")
    tenant_id, claimed, seen_fingerprint, status, body, expires_at = row
    if claimed:
        return Claimed(tenant_id, None)
    request = KeyedRequest(tenant_id=tenant_id, key=key, fingerprint=fingerprint)
    if status is not None and body is not None and expires_at > now:  # finished: it never changes again
        if seen_fingerprint != fingerprint:
            raise _reused()
        return Claimed(tenant_id, Outcome(status=status, body=body, replayed=True))
    return Claimed(tenant_id, await claim_existing(connection, request, token, now))


async def claim_existing(
    connection: AsyncConnection[Any], request: KeyedRequest, token: str, now: datetime
) -> Outcome | None:
    """A key seen before, read under a lock (NOWAIT), as pokna.idempotency.service.claim does."""
    values = {"tenant_id": request.tenant_id, **claim_values(request.key, request.fingerprint, token, now)}
    for _attempt in range(_CLAIM_ATTEMPTS):
        try:
            async with connection.transaction():
                record = await (await connection.execute(_LOCKED_RECORD, values)).fetchone()
                if record is not None and record[3] <= now:
                    await connection.execute(_DELETE_RECORD, values)
                    record = None
                if record is None:
                    if await (await connection.execute(_INSERT_CLAIM, values)).fetchone() is None:
                        continue  # a concurrent request inserted the same key first: read what it stored
                    return None
                fingerprint, status, body, _ = record
                if fingerprint != request.fingerprint:
                    raise _reused()
                if status is not None and body is not None:
                    return Outcome(status=status, body=body, replayed=True)  # the stored JSON text
                # Unfinished, and locked by us: nobody is working on it (see the service's docstring).
                await connection.execute(_TAKE_OVER, values)
                return None
        except psycopg.errors.LockNotAvailable:
            raise IdempotencyRequestInProgress(IN_PROGRESS) from None
    raise IdempotencyRequestInProgress(IN_PROGRESS)


async def authenticate(connection: AsyncConnection[Any], secret_sha256: str) -> str:
    """The tenant of a live API key (Unauthorized for any other), in one autocommit statement."""
    row = await (await connection.execute(AUTHENTICATE, {"secret_sha256": secret_sha256})).fetchone()
    if row is None:
        raise Unauthorized("unknown or revoked API key")
    tenant_id: str = row[0]
    return tenant_id


def _reused() -> IdempotencyKeyReused:
    return IdempotencyKeyReused(
        "this Idempotency-Key was used with a different request; use a new key for a new request",
        invalid_params=[
            {"name": "header.Idempotency-Key", "reason": "reused", "pointer": "/Idempotency-Key"}
        ],
    )


def held_claim(row: tuple[str, datetime] | None, token: str) -> datetime:
    """HOLD's row checked against our token; when the first attempt under the key began."""
    if row is None or row[0] != token:
        raise IdempotencyRequestInProgress("a retry with this key took over; it is being processed")
    return row[1]


async def release(connection: AsyncConnection[Any], tenant_id: str, key: str, token: str) -> None:
    """Free a claim this token holds and never completed, so the client may retry. Should the release fail
    (the database went away), the claim stays unfinished and unlocked, and a retry takes it over."""
    try:
        if connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            await connection.rollback()
        await connection.execute(_RELEASE, {"tenant_id": tenant_id, "key": key, "token": token})
    except psycopg.Error:
        pass
