"""One transaction of a game request on the async path: lock, decide, write (pokna.dealer.playing runs it).

BEGIN, the hold of the request's claim (or the key's check) and the game's lock statement go in one
pipelined round trip; the decision is made in Python on the locked rows; what it gathered (a beacon
acceptance or release, game_write(), the rolls' rounds) and COMMIT go in the next. A wallet that moved after
the read makes game_write() refuse (PK409) and the request is decided again, the last time on balances
read under the ledger's locks; a wallet a waiting beacon roll holds is refused (PK423, 409 wallet_held).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import AsyncConnection, AsyncCursor, AsyncPipeline
from sqlalchemy import Engine
from sqlalchemy.orm import sessionmaker
from starlette.concurrency import run_in_threadpool

from pokna import ledger
from pokna.db.engine import unit_of_work
from pokna.dealer.action_lock import LOCK_FOR_ACTION, split_locked
from pokna.dealer.beacon_rolls import RollPending
from pokna.dealer.deadlines import Clock
from pokna.dealer.game_queries import PROOF_EVENTS
from pokna.dealer.rake import revenue_account_id
from pokna.dealer.records import GameRecord, SeatRecord
from pokna.dealer.schemas import GameActionOut
from pokna.dealer.store_postgres import RECORDED_FOR_PROOF, locked_records, recorded_records
from pokna.dealer.writes import (
    BEACON_ROLL_WRITE,
    DECIDE_ATTEMPTS,
    GAME_WRITE,
    HELD_WALLET,
    ROUND_TOO_NEAR,
    ROUND_TOO_NEAR_WAIT_SECONDS,
    STALE_BALANCES,
    GameWrites,
    NeedsRead,
    Prefetched,
    Recorded,
    StaleBalances,
)
from pokna.errors import NotFound, WalletHeld
from pokna.idempotency import service as idempotency

OpenRevenueAccount = Callable[[str, str, int], Awaitable[str]]
"""The tenant's revenue sub-account of a currency and chain (a game's rake: its game's chain), opened if it
is not yet (rare: the chain's first rake)."""


@dataclass(frozen=True)
class Caller:
    """Who acts: an API key's digest (checked by the action's first statement), or a tenant already known
    (a command, a test)."""

    api_key_digest: str | None = None
    tenant_id: str | None = None


@dataclass(frozen=True)
class Played:
    status: int
    body: bytes
    """The answer's JSON, as sent the first time and on every replay."""
    replayed: bool
    waiting_round: int | None = None
    """Beacon mode: the drand round an action accepted by this request waits for (202 until resolved)."""
    tenant_id: str | None = None


Decide = Callable[[GameWrites, Clock, GameRecord, list[SeatRecord], dict[str, int]], GameActionOut | None]
"""A request's decision on the locked game, by the clock the lock's round trip settled (a retried key acts
as of its first attempt's deadlines)."""


@dataclass(frozen=True)
class Claim:
    tenant_id: str
    key: str
    token: str
    started_at: Any


async def decide_and_write(
    connection: AsyncConnection[Any],
    clock: Clock,
    caller: Caller,
    claim: Claim | None,
    game_id: str,
    decide: Decide,
    open_revenue_account: OpenRevenueAccount,
    answer_key: str | None,
) -> Played | None:
    for attempt in range(DECIDE_ATTEMPTS):
        try:
            return await _attempt_once(
                connection,
                clock,
                caller,
                claim,
                game_id,
                decide,
                open_revenue_account,
                answer_key,
                held=attempt > 0,
            )
        except StaleBalances:
            continue
    raise StaleBalances(f"game {game_id}: wallets kept moving over {DECIDE_ATTEMPTS} attempts")


async def _attempt_once(
    connection: AsyncConnection[Any],
    clock: Clock,
    caller: Caller,
    claim: Claim | None,
    game_id: str,
    decide: Decide,
    open_revenue_account: OpenRevenueAccount,
    answer_key: str | None,
    *,
    held: bool,
) -> Played | None:
    """One decision, in one transaction of two round trips. `held`: after a lost race, the balances are
    read under the ledger's locks (pokna.ledger.holding), so this decision is the last. None when `decide`
    found nothing to do (a beacon roll someone else resolved).

    BEGIN and COMMIT are sent as statements of the pipeline (psycopg's `transaction()` would wait for
    BEGIN on its own, and a pipeline's exit always syncs): BEGIN with the first reads, then one sync;
    game_write() and COMMIT, then the exit's sync. An error rolls back in the same way, or, when the
    server refused inside the pipeline, after it."""
    tenant_id = caller.tenant_id
    try:
        async with connection.pipeline() as pipeline:
            await connection.execute("BEGIN", prepare=False)
            ended = False
            try:
                tenant_id, clock, lock = await _lock(connection, pipeline, caller, claim, game_id, clock)
                row = await lock.fetchone()
                if row is None:
                    raise NotFound(f"no game {game_id}")
                locked, recorded = split_locked(row)
                held_balances = None
                if held:
                    game, seats, _ = locked_records(*locked)
                    held_balances = await ledger.hold_wallets(
                        connection,
                        tenant_id,
                        ledger.GameAccounts(
                            ledger.chain_for(game_id),
                            game.currency,
                            game.pot_account_id,
                            [seat.account_id for seat in seats or ()],
                        ),
                    )
                try:
                    writes, answer = await _decided(
                        connection,
                        tenant_id,
                        locked,
                        recorded,
                        held_balances,
                        lambda w, g, s, b: decide(w, clock, g, s, b),
                        open_revenue_account,
                        answer_key,
                    )
                except RollPending as pending:
                    pending.tenant_id = tenant_id
                    if pending.kept:  # a passed deadline's roll was accepted before the refusal: keep it
                        await _send(connection, pending.kept, None)
                        await connection.execute("COMMIT", prepare=False)
                        ended = True
                        # Synced before the refusal is raised: a server error in the kept writes (a moved
                        # or held wallet) must surface as itself, not behind a roll_pending that never was.
                        await pipeline.sync()
                    raise
                if answer is None:
                    await connection.execute("ROLLBACK", prepare=False)
                    return None
                body = answer.model_dump_json()
                status = 200 if writes.accepted_round is None else 202
                stored = writes.stored(status, body)
                started = time.perf_counter()
                await _send(connection, writes, stored)
                await connection.execute("COMMIT", prepare=False)
                ended = True
            except BaseException:
                if not ended:
                    await connection.execute("ROLLBACK", prepare=False)
                raise
    except psycopg.Error as error:
        if error.sqlstate == STALE_BALANCES:
            await _rolled_back(connection)
            raise StaleBalances(str(error)) from None
        if error.sqlstate == ROUND_TOO_NEAR:
            await _rolled_back(connection)
            await asyncio.sleep(ROUND_TOO_NEAR_WAIT_SECONDS)
            raise StaleBalances(str(error)) from None
        if error.sqlstate == HELD_WALLET:
            await _rolled_back(connection)
            raise WalletHeld(_held_detail(error)) from None
        await connection.close()
        raise
    writes.written(time.perf_counter() - started)
    return Played(
        status, body.encode(), replayed=False, waiting_round=writes.accepted_round, tenant_id=tenant_id
    )


async def _send(connection: AsyncConnection[Any], writes: GameWrites, stored: dict[str, Any] | None) -> None:
    """What the decision gathered, in pipeline: a beacon acceptance or release, game_write(), the rolls'
    rounds."""
    for call in writes.beacon_calls(writes.before):
        await connection.execute(BEACON_ROLL_WRITE, call)
    await connection.execute(GAME_WRITE, (writes.tenant_id, writes.document(stored)))
    for call in writes.beacon_calls(writes.after):
        await connection.execute(BEACON_ROLL_WRITE, call)


async def _lock(
    connection: AsyncConnection[Any],
    pipeline: AsyncPipeline,
    caller: Caller,
    claim: Claim | None,
    game_id: str,
    clock: Clock,
) -> tuple[str, Clock, AsyncCursor[Any]]:
    """The caller's tenant, the clock to decide by, and the game's lock statement, its result received:
    the hold of the claim (or the key's check) and the lock, pipelined behind BEGIN in one round trip."""
    if claim is not None:
        hold = await connection.execute(idempotency.HOLD, {"tenant_id": claim.tenant_id, "key": claim.key})
        lock = await connection.execute(LOCK_FOR_ACTION, {"game_id": game_id, "tenant_id": claim.tenant_id})
        await pipeline.sync()
        first_at = idempotency.held_claim(await hold.fetchone(), claim.token)
        # A retry of an action the service failed to finish acts as of its first attempt's deadlines.
        return claim.tenant_id, clock.resuming(first_at if first_at < claim.started_at else None), lock
    if caller.tenant_id is not None:
        params = {"game_id": game_id, "tenant_id": caller.tenant_id}
        lock = await connection.execute(LOCK_FOR_ACTION, params)
        await pipeline.sync()
        return caller.tenant_id, clock, lock
    # The lock names its tenant as a bound value (on Citus a tenant read from `api_key` in the same
    # statement would not route it to one shard, and a lock over several is refused): the tenant this
    # process remembers for the key, checked by the key's own statement in the same round trip; a key not
    # seen yet is checked first, one round trip more (docs/scaling.md).
    digest = caller.api_key_digest
    assert digest is not None
    remembered = idempotency.TENANTS.get(digest)
    checked = await connection.execute(idempotency.AUTHENTICATE, {"secret_sha256": digest})
    if remembered is not None:
        lock = await connection.execute(LOCK_FOR_ACTION, {"game_id": game_id, "tenant_id": remembered})
    await pipeline.sync()
    tenant_id = idempotency.authenticated(digest, await checked.fetchone())
    if remembered != tenant_id:  # not remembered yet (or, were a key's tenant ever to change, stale)
        lock = await connection.execute(LOCK_FOR_ACTION, {"game_id": game_id, "tenant_id": tenant_id})
        await pipeline.sync()
    return tenant_id, clock, lock


async def _decided(
    connection: AsyncConnection[Any],
    tenant_id: str,
    locked: tuple[Any, ...],
    recorded: Recorded | None,
    held_balances: dict[str, int] | None,
    decide: Callable[[GameWrites, GameRecord, list[SeatRecord], dict[str, int]], GameActionOut | None],
    open_revenue_account: OpenRevenueAccount,
    answer_key: str | None,
) -> tuple[GameWrites, GameActionOut | None]:
    """The request decided on the locked game (LOCK_FOR_ACTION's row), and what it writes. A decision
    that needs a read not yet made is made again, on records built afresh from the row, once the read is
    made (the rules are pure; nothing was written)."""
    prefetched = Prefetched(recorded=recorded)
    while True:
        game, seats, balances = locked_records(*locked)
        if seats is None:
            raise StaleBalances("the seats changed while the game's lock was awaited")
        writes = GameWrites(tenant_id, prefetched, answer_key=answer_key)
        try:
            answer = decide(writes, game, seats, dict(held_balances or balances))
            return writes, answer
        except NeedsRead as need:
            if need.what == "recorded":
                params = {"tenant_id": tenant_id, "game_id": game.id, "kinds": list(PROOF_EVENTS)}
                row = await (await connection.execute(RECORDED_FOR_PROOF, params)).fetchone()
                assert row is not None
                prefetched.recorded = recorded_records(*row)
            else:
                prefetched.revenue_account = await open_revenue_account(
                    tenant_id, game.currency, ledger.chain_for(game.id)
                )


def _held_detail(error: psycopg.Error) -> str:
    return str(error.diag.message_primary or error)


async def _rolled_back(connection: AsyncConnection[Any]) -> None:
    """End a transaction the server refused in (it is left failed, not ended), to decide again on the
    same connection. Only game_write()'s own refusal comes here, after which the pipeline held only COMMIT,
    which is never a prepared statement (BEGIN, COMMIT and ROLLBACK are sent with `prepare=False`): the
    statements a pipeline skips after an error are not validated by psycopg, so one it meant to prepare
    there would be remembered as prepared when the server never saw it. Any other server error closes
    the connection instead, and its prepared statements with it."""
    if connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        await connection.execute("ROLLBACK", prepare=False)


def revenue_account_opener(engine: Engine) -> OpenRevenueAccount:
    """Opens a revenue sub-account in a transaction of its own, in the thread pool (once per tenant,
    currency and chain: an opened account that the action then does not use is harmless, and is used next
    time)."""

    def open_in_thread(tenant_id: str, currency: str, chain: int) -> str:
        with unit_of_work(sessionmaker(bind=engine, expire_on_commit=False)) as session:
            return revenue_account_id(session, tenant_id, currency, chain)

    async def open_account(tenant_id: str, currency: str, chain: int) -> str:
        return await run_in_threadpool(open_in_thread, tenant_id, currency, chain)

    return open_account
