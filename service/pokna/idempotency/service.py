"""Exactly-once requests under an idempotency key, safe across any number of stateless processes: the one
implementation, as driver statements on a psycopg connection, for every POST that takes an Idempotency-Key.

1. The key is claimed in autocommit (a record keyed by tenant and key, carrying a fresh claim token), so
   that a concurrent retry finds it before the work is done: same request still running ->
   `IdempotencyRequestInProgress`; different request -> `IdempotencyKeyReused`; the same request finished
   -> its stored answer, replayed. This is the one commit that cannot wait for the end of the request: a
   claim nobody else can see does not stop a retry from doing the work a second time.
2. The work's transaction first locks the claim and checks the token is still ours (`HOLD`,
   `held_claim`), keeps that lock to the end, and stores the answer on the claim before its COMMIT: the
   answer is stored exactly when the work's effects are committed. (The hot paths, in the keyed
   transaction of pokna.idempotency.keyed, store it in their last call, pokna.dealer.writes and
   pokna.ledger.moving; the admin writes, pokna.api.keyed_writes, with `STORE_RESPONSE`.)
3. If the work or its commit fails, the transaction is rolled back and the claim released (`release`),
   so the client may retry.

A claim is live exactly while its holder's transaction holds the record locked (step 2): a row lock, which
dies with the holder: a killed process, a lost connection or a restarted database ends its transaction and
frees the lock at once. So a retry that finds an unfinished claim it can lock takes it over at once, with a
new token; there is no wall-clock lease to wait out. A retry that cannot lock it (NOWAIT) is told the
request is in progress. Between the claim and the hold a live request holds no lock: a retry arriving in
that moment takes over, and the first request, its token no longer matching, is refused with
`IdempotencyRequestInProgress` and does nothing, so the work is still done once. The claim records when the
first attempt began; a retry that takes over an interrupted attempt is told when (`held_claim`), so the
work can act as of then (a game's turn deadline does not run out on a seat whose action was in flight when
the service failed). Records are kept for 24 hours; `purge_expired` (`pokna sweep`) deletes them after.

Round trips: the request's first authenticates its API key, claims the key and reads the record of a key
seen before, on the tenant's rows (`authenticate_and_claim`), so a finished request replays at once; an
unfinished one seen before takes the slow path (`claim_existing`). The key's check and the claim are
separate statements: on Citus a statement whose tenant comes from `api_key` (a reference table) at run time
cannot be routed to the tenant's worker (docs/scaling.md). They still go in one round trip, the claim under
the tenant the process remembers for the key, the key's check beside it: pokna.tenants.authentication
owns the check, the memory and its rule (a revoked key's claim is undone and refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import AsyncConnection

from pokna.errors import IdempotencyKeyReused, IdempotencyRequestInProgress
from pokna.tenants import authentication
from pokna_verify.invariant import present

RETENTION = timedelta(hours=24)
IN_PROGRESS = "the first request with this key is still being processed"
_CLAIM_ATTEMPTS = 3


@dataclass(frozen=True)
class KeyedRequest:
    tenant_id: str
    key: str
    fingerprint: str
    """Tells a retry of the same request from another request under the same key."""


@dataclass(frozen=True)
class Answer:
    """A keyed request's answer, the one shape every keyed path returns (pokna.idempotency.keyed)."""

    status: int
    body: bytes
    """The answer's JSON, as sent the first time and on every replay."""
    replayed: bool


_INSERT_CLAIM = (
    "INSERT INTO idempotency_record (tenant_id, key, request_fingerprint, claim_token, created_at, expires_at) "
    "VALUES (%(tenant_id)s, %(key)s, %(fingerprint)s, %(token)s, %(now)s, %(expires_at)s) "
    "ON CONFLICT (tenant_id, key) DO NOTHING RETURNING key"
)
_SEEN = (
    "SELECT request_fingerprint, response_status, response_body, expires_at FROM idempotency_record "
    "WHERE tenant_id = %(tenant_id)s AND key = %(key)s"
)
"""Sent with `_INSERT_CLAIM` in one round trip: a key seen before, so that a replay of a stored answer
needs no second one. Two statements, each filtered by the tenant as a bound value, and not one statement
with the insert in a CTE: Citus routes each of these to the tenant's shard alone, but plans an INSERT in
a CTE recursively (the insert, then the read, each as a subplan whose rows the coordinator writes to a
file and reads back): three executions and two files per keyed request (issue 45, item 5)."""
_LOCKED_RECORD = _SEEN + " FOR UPDATE NOWAIT"
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
STORE_RESPONSE = (
    "UPDATE idempotency_record SET response_status = %(status)s, response_body = %(body)s, locked_until = NULL "
    "WHERE tenant_id = %(tenant_id)s AND key = %(key)s"
)
"""The answer stored on the claim, in the work's transaction (which holds the claim: `HOLD`)."""
_PURGE_EXPIRED = "DELETE FROM idempotency_record WHERE expires_at <= %(now)s AND tenant_id = %(tenant_id)s"


@dataclass(frozen=True)
class Claimed:
    tenant_id: str
    stored: Answer | None
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
    """Autocommit: the caller's tenant (by its API key's digest, unless already known), and the key claimed
    for `token` (or its record) on that tenant's rows; one round trip when the key's tenant is known."""
    values = claim_values(key, fingerprint, token, now)
    if tenant_id is not None:
        async with connection.pipeline():
            claim = await _claim(connection, {**values, "tenant_id": tenant_id})
    else:
        digest = present(secret_sha256, "a key's digest when the caller's tenant is not yet known")

        async def unclaim(remembered: str) -> None:  # claimed under a tenant the key is not (or no longer) of
            await release(connection, remembered, key, token)

        async with connection.pipeline():  # all sent, and answered, when the block ends
            key_check = await authentication.check(connection, digest)
            if key_check.remembered is not None:
                claim = await _claim(connection, {**values, "tenant_id": key_check.remembered})
        tenant_id = await key_check.tenant(unclaim)
        if tenant_id != key_check.remembered:
            async with connection.pipeline():
                claim = await _claim(connection, {**values, "tenant_id": tenant_id})
    inserted, seen = claim
    if await inserted.fetchone() is not None:
        return Claimed(tenant_id, None)
    request = KeyedRequest(tenant_id=tenant_id, key=key, fingerprint=fingerprint)
    record = await seen.fetchone()
    if record is not None:
        seen_fingerprint, status, body, expires_at = record
        if status is not None and body is not None and expires_at > now:  # finished: it never changes again
            if seen_fingerprint != fingerprint:
                raise _reused()
            return Claimed(tenant_id, Answer(status, body.encode(), replayed=True))
    return Claimed(tenant_id, await claim_existing(connection, request, token, now))


async def _claim(
    connection: AsyncConnection[Any], values: dict[str, Any]
) -> tuple[psycopg.AsyncCursor[Any], psycopg.AsyncCursor[Any]]:
    """The claim's insert and the read of a record seen before, queued in the caller's pipeline."""
    return await connection.execute(_INSERT_CLAIM, values), await connection.execute(_SEEN, values)


async def claim_existing(
    connection: AsyncConnection[Any], request: KeyedRequest, token: str, now: datetime
) -> Answer | None:
    """A key seen before, read under a lock (NOWAIT): expired (deleted and claimed afresh), another
    request's (reused), finished (replayed), or unfinished and nobody's (taken over)."""
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
                    return Answer(status, body.encode(), replayed=True)  # the stored JSON text
                # Unfinished, and locked by us: nobody is working on it (its holder died, or is between its
                # claim and its hold, where taking over is safe too). The first attempt's moment stays.
                await connection.execute(_TAKE_OVER, values)
                return None
        except psycopg.errors.LockNotAvailable:
            raise IdempotencyRequestInProgress(IN_PROGRESS) from None
    raise IdempotencyRequestInProgress(IN_PROGRESS)


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


async def purge_expired(connection: AsyncConnection[Any], now: datetime, tenant_id: str) -> int:
    """Delete the tenant's records past their retention; returns how many (`pokna sweep`, tenant by tenant,
    on an autocommit connection: one statement, its own transaction)."""
    deleted = await connection.execute(_PURGE_EXPIRED, {"now": now, "tenant_id": tenant_id})
    return max(deleted.rowcount, 0)
