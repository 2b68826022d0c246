"""One transaction of a game request, from BEGIN to COMMIT: lock and read, decide, write, in the keyed
transaction (pokna.idempotency.keyed).

BEGIN, the hold of the request's claim (or the key's check) and the game's lock statement
(pokna.dealer.action.locked.LOCK_FOR_ACTION) go in one pipelined round trip; the game as locked is decided on
in Python (pokna.dealer.action.decision.decide, no I/O, its moment, ids and randomness given: `live_env`, read
under the lock), and the transaction matches on the `Decision` it returns; what the decision gathered (a
beacon acceptance or release, game_write(), the rolls' rounds) and COMMIT go in the next. A wallet that moved
after the read makes game_write() refuse and the request is decided again, the last time on balances read
under the ledger's locks; a wallet a waiting beacon roll holds is refused (409 wallet_held):
pokna.dealer.writes.REFUSALS. Actions, beacon resolutions and deadlines (a read's touch, the sweep) all run
here (pokna.dealer.action.game_action); a new game has its own transaction (pokna.dealer.creating).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from typing import Any

from psycopg import AsyncConnection

from pokna import ledger
from pokna.dealer.action.answer import ACCEPTED
from pokna.dealer.action.decision import Decision, Intent, PendingBeaconRound, Refused, Written, decide
from pokna.dealer.action.locked import (
    LOCK_FOR_ACTION,
    Clock,
    LockedGame,
    NeedsRead,
    Recorded,
    live_env,
    locked_game,
    split_locked,
)
from pokna.dealer.records import PROOF_EVENTS
from pokna.dealer.store_postgres import RECORDED_FOR_PROOF, locked_records, recorded_records
from pokna.dealer.writes import (
    BEACON_ROLL_WRITE,
    DECIDE_ATTEMPTS,
    GAME_WRITE,
    REFUSALS,
    ROUND_TOO_NEAR_WAIT_SECONDS,
    GameWrites,
    RoundTooNear,
    StaleBalances,
)
from pokna.errors import NotFound
from pokna.idempotency.keyed import Caller, Claim, transaction
from pokna.ledger.accounts_aio import open_system_account
from pokna.service_keys import ServiceKeys
from pokna_verify.invariant import present


@dataclass(frozen=True)
class Dealer:
    """What every decision and write of the dealer's needs beside the request: the service's keys."""

    keys: ServiceKeys


@dataclass(frozen=True)
class Committed:
    """A decision, written and committed: the tenant it was decided for, and its answer's status and JSON
    (None when there was nothing to answer)."""

    tenant_id: str
    decision: Written
    status: int
    body: str | None


async def run(
    connection: AsyncConnection[Any],
    dealer: Dealer,
    clock: Clock,
    caller: Caller,
    claim: Claim | None,
    game_id: str,
    intent: Intent,
) -> Committed | None:
    """`intent` decided on the game and written, in one transaction, decided again (up to DECIDE_ATTEMPTS
    times) while a seated wallet keeps moving under it. None when the decision found nothing to write
    and nothing to answer."""
    for attempt in range(DECIDE_ATTEMPTS):
        try:
            return await _attempt_once(
                connection, dealer, clock, caller, claim, game_id, intent, held=attempt > 0
            )
        except RoundTooNear:
            await asyncio.sleep(ROUND_TOO_NEAR_WAIT_SECONDS)
        except StaleBalances:
            continue
    raise StaleBalances(f"game {game_id}: wallets kept moving over {DECIDE_ATTEMPTS} attempts")


async def _attempt_once(
    connection: AsyncConnection[Any],
    dealer: Dealer,
    clock: Clock,
    caller: Caller,
    claim: Claim | None,
    game_id: str,
    intent: Intent,
    *,
    held: bool,
) -> Committed | None:
    """One decision, in two round trips (the module's docstring). `held`: after a lost race, the balances
    are read under the ledger's locks (pokna.ledger.holding), so this decision is the last."""
    async with transaction(connection, caller, claim, REFUSALS) as opened:
        lock = await opened.read(
            lambda tenant_id: connection.execute(
                LOCK_FOR_ACTION, {"game_id": game_id, "tenant_id": tenant_id}
            )
        )
        tenant_id = opened.tenant
        # A retry of an action the service failed to finish acts as of its first attempt.
        if claim is not None:
            clock = clock.resuming(opened.resumed_at)
        row = await lock.fetchone()
        if row is None:
            raise NotFound(f"no game {game_id}")
        locked_row, recorded = split_locked(row)
        held_accounts = None
        if held:
            held_accounts = await _held_accounts(connection, tenant_id, game_id, locked_row)
        decided = await _decided(
            connection, dealer, clock, tenant_id, locked_row, recorded, held_accounts, intent
        )
        match decided:
            case Written() as decision:
                pass
            case PendingBeaconRound(refusal=pending, kept=kept):
                pending.tenant_id = tenant_id
                if kept:  # a passed deadline's roll was accepted before the refusal: keep it
                    await _send(connection, kept, None)
                    await opened.end(commit=True)
                    # Synced before the refusal is raised: a server error in the kept writes (a moved or
                    # held wallet) must surface as itself, not behind a roll_pending that never was.
                    await opened.pipeline.sync()
                raise pending
            case Refused(refusal=refused):
                raise refused
        writes = decision.writes
        if decision.answer is None and not writes:
            await opened.end(commit=False)
            return None
        status = 200 if writes.accepted_round is None else ACCEPTED  # waiting for its beacon round
        body = None if decision.answer is None else decision.answer.json()
        stored = None if body is None else writes.stored(status, body)
        started = time.perf_counter()
        await _send(connection, writes, stored)
    writes.written(time.perf_counter() - started)
    return Committed(tenant_id, decision, status, body)


async def _held_accounts(
    connection: AsyncConnection[Any], tenant_id: str, game_id: str, locked_row: tuple[Any, ...]
) -> tuple[dict[str, int], str | None]:
    """The wallets' balances read under the ledger's locks, and a raking game's revenue account, opened
    first if it is not yet: opened after the head of the chain is held, it could wait for a concurrent
    first rake's opening, uncommitted, whose posting waits for that head."""
    game, seats, _ = locked_records(*locked_row)
    revenue = None
    if game.state["config"].get("rake_bps"):
        revenue = await _revenue_account(connection, tenant_id, game.id, game.currency)
    balances = await ledger.hold_wallets(
        connection,
        tenant_id,
        ledger.GameAccounts(
            ledger.chain_for(game_id),
            game.currency,
            game.pot_account_id,
            [seat.account_id for seat in seats or ()],
        ),
    )
    return balances, revenue


async def _send(connection: AsyncConnection[Any], writes: GameWrites, stored: dict[str, Any] | None) -> None:
    """What the decision gathered, in pipeline: a beacon acceptance or release, game_write(), the rolls'
    rounds."""
    for call in writes.beacon_calls(writes.before):
        await connection.execute(BEACON_ROLL_WRITE, call)
    await connection.execute(GAME_WRITE, (writes.tenant_id, writes.document(stored)))
    for call in writes.beacon_calls(writes.after):
        await connection.execute(BEACON_ROLL_WRITE, call)


async def _decided(
    connection: AsyncConnection[Any],
    dealer: Dealer,
    clock: Clock,
    tenant_id: str,
    locked_row: tuple[Any, ...],
    recorded: Recorded | None,
    held: tuple[dict[str, int], str | None] | None,
    intent: Intent,
) -> Decision:
    """The intent decided on the game as locked (LOCK_FOR_ACTION's row), never NeedsRead: a decision that
    needs a read not yet made is made again on the same game (`decide` changes nothing it is given) and
    with the same `env`, once the read is made (the rules are pure; nothing was written)."""
    held_balances, revenue_account = held or (None, None)
    locked = locked_game(
        locked_row,
        dealer.keys,
        clock,
        balances=held_balances,
        recorded=recorded,
        revenue_account=revenue_account,
    )
    if locked is None:
        raise StaleBalances("the seats changed while the game's lock was awaited")
    env = live_env()
    while True:
        match decide(locked, intent, env):
            case NeedsRead(what="recorded"):
                locked = replace(locked, recorded=await _recorded(connection, tenant_id, locked))
            case NeedsRead(what="revenue_account"):
                game = locked.game
                revenue = await _revenue_account(connection, tenant_id, game.id, game.currency)
                locked = replace(locked, revenue_account=revenue)
            case decision:
                return decision


async def _recorded(connection: AsyncConnection[Any], tenant_id: str, locked: LockedGame) -> Recorded:
    params = {"tenant_id": tenant_id, "game_id": locked.game.id, "kinds": list(PROOF_EVENTS)}
    row = await (await connection.execute(RECORDED_FOR_PROOF, params)).fetchone()
    return recorded_records(*present(row, "one row of aggregates"))


async def _revenue_account(
    connection: AsyncConnection[Any], tenant_id: str, game_id: str, currency: str
) -> str:
    """The revenue account of the game's currency and chain, opened in the action's transaction if it is
    not yet (once per tenant, currency and chain; a concurrent first rake's waits for this one's COMMIT)."""
    kind = ledger.AccountKind.REVENUE
    return await open_system_account(connection, tenant_id, kind, currency, ledger.chain_for(game_id))
