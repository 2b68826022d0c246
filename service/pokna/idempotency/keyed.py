"""The keyed transaction: the one way a POST on the driver writes (a game's action, creation or round, a
deposit or withdrawal), and the one module that spells BEGIN, COMMIT and ROLLBACK.

1. `keyed`: the caller authenticated and the Idempotency-Key claimed in autocommit, one round trip
   (pokna.idempotency.service); a key answered before returns its stored answer here, before any work.
   Whatever fails after the claim releases it, so the client may retry (on the same connection, unless
   the failure closed it: then the claim stays unfinished and unlocked, which a retry takes over, or the
   caller releases it on another, as pokna.api.keyed_writes does).
2. `transaction`: BEGIN, the claim's hold (or, with no key and no tenant known, the API key's check) and
   the domain's reads, pipelined: one round trip (`Transaction.read`). The domain decides on what they
   read, in Python, and queues its writes; COMMIT goes behind them, sent by the pipeline's exit.

BEGIN and COMMIT are statements of the pipeline (psycopg's `transaction()` would wait for BEGIN on its
own, and a pipeline's exit always syncs). Each domain names once what the database's refusals of its
writes mean (a table of SQLSTATE -> error); such a refusal rolls back and keeps the connection, and any
other database error closes it (its prepared statements with it).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection, AsyncPipeline

from pokna.db.types import utc_now
from pokna.idempotency import service as idempotency
from pokna.idempotency.service import Answer as Answer  # the keyed paths' one answer, named here too
from pokna.tenants import authentication
from pokna_verify.invariant import present

T = TypeVar("T")
Refusals = Mapping[str, Callable[[psycopg.Error], Exception]]
"""A domain's reading of the database's refusals of its writes: SQLSTATE -> the error it means."""


@dataclass(frozen=True)
class Caller:
    """Who writes: an API key's digest, or a tenant already known (a command, the sweep, a test)."""

    api_key_digest: str | None = None
    tenant_id: str | None = None


@dataclass(frozen=True)
class Keyed:
    """The request's Idempotency-Key and the fingerprint of what it was sent with."""

    key: str
    fingerprint: str


@dataclass(frozen=True)
class Claim:
    """An Idempotency-Key claimed in round trip 1 for `token`, when that began."""

    tenant_id: str
    key: str
    token: str
    started_at: datetime


async def keyed(
    connection: AsyncConnection[Any],
    caller: Caller,
    sent: Keyed | None,
    work: Callable[[Caller, Claim | None], Awaitable[T]],
    *,
    check_in_transaction: bool = False,
) -> T | Answer:
    """`work` done for the caller's tenant under the claimed key, or the key's stored answer. Without a
    key the caller is authenticated first, in a round trip of its own, unless `check_in_transaction`
    (the work's transaction checks the key beside its reads, `Transaction.read`)."""
    if sent is None:
        if caller.tenant_id is None and not check_in_transaction:
            digest = present(caller.api_key_digest, "a key's digest when the tenant is not yet known")
            caller = Caller(tenant_id=await authentication.authenticate(connection, digest))
        return await work(caller, None)
    token, started_at = secrets.token_hex(16), utc_now()
    claimed = await idempotency.authenticate_and_claim(
        connection, caller.api_key_digest, caller.tenant_id, sent.key, sent.fingerprint, token, started_at
    )
    if claimed.stored is not None:
        return claimed.stored
    claim = Claim(claimed.tenant_id, sent.key, token, started_at)
    try:
        return await work(Caller(tenant_id=claim.tenant_id), claim)
    except BaseException:
        if (
            not connection.closed
        ):  # else the caller releases it on another connection, or a retry takes it over
            await idempotency.release(connection, claim.tenant_id, claim.key, token)
        raise


class Transaction:
    """One transaction in a pipeline, open from BEGIN until the block ends (or `end`)."""

    def __init__(
        self, connection: AsyncConnection[Any], pipeline: AsyncPipeline, caller: Caller, claim: Claim | None
    ) -> None:
        self.connection = connection
        self.pipeline = pipeline
        self.caller = caller
        self.claim = claim
        self.tenant_id = caller.tenant_id
        self.resumed_at: datetime | None = None
        """A retry's: when the first attempt under the key began, if before this one (`held_claim`)."""
        self.ended = False

    @property
    def tenant(self) -> str:
        """The caller's tenant, once `read` has authenticated it."""
        return present(self.tenant_id, "the tenant, known once read")

    async def read(self, queue: Callable[[str], Awaitable[T]]) -> T:
        """The transaction's first round trip: BEGIN, the claim's hold (or the key's check) and what
        `queue` sends for the tenant, their answers received. A key whose tenant this process did not
        remember yet has `queue` sent again under its tenant: one round trip more, once."""
        hold = check = reads = None
        claim = self.claim
        if claim is not None:
            values = {"tenant_id": claim.tenant_id, "key": claim.key}
            hold = await self.connection.execute(idempotency.HOLD, values)
            self.tenant_id = claim.tenant_id
        elif self.tenant_id is None:
            digest = present(self.caller.api_key_digest, "a key's digest when the tenant is not yet known")
            check = await authentication.check(self.connection, digest)
            self.tenant_id = check.remembered
        if self.tenant_id is not None:
            reads = await queue(self.tenant_id)
        await self.pipeline.sync()
        if hold is not None and claim is not None:
            first_at = idempotency.held_claim(await hold.fetchone(), claim.token)
            self.resumed_at = first_at if first_at < claim.started_at else None
        if check is not None:  # a revoked key is refused here, and the ROLLBACK undoes what it read
            remembered, self.tenant_id = self.tenant_id, await check.tenant()
            if self.tenant_id != remembered:
                reads = await queue(self.tenant_id)
                await self.pipeline.sync()
        return present(reads, "the reads, queued and synced")

    async def end(self, *, commit: bool) -> None:
        """COMMIT (or ROLLBACK) now, before the block ends: what follows is sent after it."""
        await self.connection.execute("COMMIT" if commit else "ROLLBACK", prepare=False)
        self.ended = True


@asynccontextmanager
async def transaction(
    connection: AsyncConnection[Any], caller: Caller, claim: Claim | None, refusals: Refusals | None = None
) -> AsyncIterator[Transaction]:
    """BEGIN, queued; the block's statements; COMMIT, sent with the last of them when the block ends, or
    ROLLBACK if it raises. A refusal named in `refusals` is raised as its error."""
    try:
        async with connection.pipeline() as pipeline:
            await connection.execute("BEGIN", prepare=False)
            opened = Transaction(connection, pipeline, caller, claim)
            try:
                yield opened
                if not opened.ended:
                    await opened.end(commit=True)
            except BaseException:
                if not opened.ended:
                    await opened.end(commit=False)
                raise
    except psycopg.Error as error:
        refused = (refusals or {}).get(error.sqlstate or "")
        if refused is None:
            await connection.close()
            raise
        await _rolled_back(connection)
        raise refused(error) from None


async def _rolled_back(connection: AsyncConnection[Any]) -> None:
    """End a transaction the server refused in (it is left failed, not ended), to go on on the same
    connection, with psycopg's `rollback()`, which also forgets every statement psycopg prepared on it
    (and deallocates them). Statements may follow the refused one in its pipeline (a beacon roll's write
    behind `game_write()`, the stored answer behind a wallet's insert); the server skips them, and one
    psycopg was preparing at that execution it would remember as prepared (psycopg 3.3.9: nothing
    validates that Parse), so that every later use of it on this connection would fail: `prepared
    statement "_pg3_N" does not exist`, a 500 for a stale decision's retry on the same connection."""
    await connection.rollback()
