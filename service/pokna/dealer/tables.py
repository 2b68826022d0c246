"""Tables: a fixed seat order played round after round, the title of Vigo passing clockwise.

A round is a new game, created as any is (pokna.dealer.creating, async on the driver), in a transaction
that also locks the table (so rounds are dealt one at a time) and counts the round (`rounds_played` moves
with the game it counts). A table itself is created under the keyed transaction too
(pokna.api.keyed_writes), and read as a game is (pokna.dealer.reading)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg.types.json import Json

from pokna.db.types import new_id
from pokna.dealer.action.action_transaction import Dealer
from pokna.dealer.action.answer import CREATED
from pokna.dealer.action.game_action import catch_up
from pokna.dealer.action.locked import Clock
from pokna.dealer.creating import (
    NewGame,
    NewRecords,
    beacon_chain_for,
    check_distinct,
    seated,
    seated_balances,
    write_new_game,
)
from pokna.dealer.errors import RoundInProgress
from pokna.dealer.rake import RakeTerms, game_config, tenant_defaults
from pokna.dealer.records import TableRecord
from pokna.dealer.schemas import TableOut
from pokna.dealer.store_postgres import INSERT_TABLE, LAST_ROUND, TABLE_FOR_ROUND, TABLE_ROUND_DEALT
from pokna.dealer.view import table_out
from pokna.errors import NotFound
from pokna.idempotency.keyed import Answer, Caller, Claim, Keyed, Transaction, keyed, transaction
from pokna.ledger.accounts_aio import ACCOUNT_SUMMARIES, summaries
from pokna.service_keys import ServiceKeys
from pokna.tenants.settings import GAME_DEFAULTS
from pokna_verify.fairness.beacon import BeaconChain
from pokna_verify.game import round_seating


@dataclass(frozen=True)
class NewTable:
    account_ids: list[str]
    stake: int
    challenge_raise: int | None = None
    currency: str = "CREDIT"
    turn_timeout_seconds: int = 60
    rake: RakeTerms | None = None  # None: the tenant's default rake terms, fixed for every round now


async def create_table(opened: Transaction, terms: NewTable, clock: Clock) -> TableOut:
    """A new table, in `opened`: its seats' wallets and the tenant's default rake read in the
    transaction's first round trip, the table written with its COMMIT. The seats are checked as a game's
    are (pokna.dealer.creating), each named by its place in `body.account_ids`."""
    seats = list(terms.account_ids)
    fields = [f"body.account_ids.{index}" for index in range(len(seats))]
    check_distinct(seats, fields)
    connection = opened.connection

    async def reads(tenant_id: str) -> tuple[psycopg.AsyncCursor[Any], ...]:
        accounts = await connection.execute(ACCOUNT_SUMMARIES, {"tenant_id": tenant_id, "account_ids": seats})
        return accounts, await connection.execute(GAME_DEFAULTS, {"tenant_id": tenant_id})

    accounts, defaults = await opened.read(reads)
    seated_balances(summaries(await accounts.fetchall()), seats, terms.currency, fields)
    default_rake, _ = await tenant_defaults(defaults)
    rake = terms.rake or default_rake
    game_config(terms.stake, terms.challenge_raise, len(seats) - 1, rake)
    table = TableRecord(
        id=new_id("tbl"),
        account_ids=seats,
        stake=terms.stake,
        challenge_raise=terms.stake if terms.challenge_raise is None else terms.challenge_raise,
        currency=terms.currency,
        turn_timeout_seconds=terms.turn_timeout_seconds,
        rounds_played=0,  # a new table has played no round yet
        rake_bps=rake.bps,
        rake_cap=rake.cap,
        created_at=clock.now,
    )
    values = {**asdict(table), "tenant_id": opened.tenant, "account_ids": Json(seats)}
    await connection.execute(INSERT_TABLE, values)
    return table_out(table, ())


async def deal_round(
    connection: AsyncConnection[Any],
    dealer: Dealer,
    clock: Clock,
    caller: Caller,
    sent: Keyed | None,
    table_id: str,
    beacon_chain: BeaconChain | None = None,
) -> Answer:
    """The next round's game (201), with the Vigo title passed clockwise, created as any game is
    (pokna.dealer.creating) in the table's transaction. One round at a time. Its fairness mode is the
    tenant's default (`beacon_chain` as in pokna.dealer.creating.create_game). Whoever touches a game after
    its deadline applies it, dealing the next round included: a previous round's passed deadline is applied
    first (pokna.dealer.action.game_action.catch_up), then the round is dealt, under the same claim."""

    async def deal(caller: Caller, claim: Claim | None) -> Answer:
        round_ = _Round(table_id, claim, beacon_chain)
        try:
            return await _deal(connection, dealer.keys, clock, caller, round_, caught_up=False)
        except DeadlinePassed as passed:
            await catch_up(connection, dealer, clock, passed.tenant_id, passed.game_id)
        return await _deal(connection, dealer.keys, clock, caller, round_, caught_up=True)

    return await keyed(connection, caller, sent, deal)


class DeadlinePassed(Exception):
    """The table's previous round has a deadline passed at the clock's `now`: catch it up, then deal."""

    def __init__(self, tenant_id: str, game_id: str) -> None:
        super().__init__(f"game {game_id} has a deadline passed")
        self.tenant_id = tenant_id
        self.game_id = game_id


@dataclass(frozen=True)
class _Round:
    table_id: str
    claim: Claim | None
    beacon_chain: BeaconChain | None


async def _deal(
    connection: AsyncConnection[Any],
    keys: ServiceKeys,
    clock: Clock,
    caller: Caller,
    round_: _Round,
    *,
    caught_up: bool,
) -> Answer:
    """BEGIN, the claim's hold, the table's lock, its last round and the tenant's defaults; the seats'
    wallets; then the new game's writes (pokna.dealer.creating.write_new_game), the table's count and
    COMMIT: three round trips after the claim's."""

    async def reads(tenant_id: str) -> tuple[psycopg.AsyncCursor[Any], ...]:
        params = {"tenant_id": tenant_id, "table_id": round_.table_id}
        table = await connection.execute(TABLE_FOR_ROUND, params)
        last = await connection.execute(LAST_ROUND, params)
        return table, last, await connection.execute(GAME_DEFAULTS, {"tenant_id": tenant_id})

    async with transaction(connection, caller, round_.claim) as opened:
        table, last, defaults = await opened.read(reads)
        tenant_id = opened.tenant
        row = await table.fetchone()
        if row is None:
            raise NotFound(f"no table {round_.table_id}")
        _check_last_round(await last.fetchone(), tenant_id, clock, caught_up=caught_up)
        account_ids, stake, challenge_raise, currency, timeout, rake_bps, rake_cap, played = row
        rake = RakeTerms(rake_bps, rake_cap)
        order = [account_ids[position] for position in round_seating(len(account_ids), played)]
        terms = NewGame(
            vigo_account_id=order[0],
            player_account_ids=order[1:],
            stake=stake,
            challenge_raise=challenge_raise,
            currency=currency,
            turn_timeout_seconds=timeout,
            rake=rake,
        )
        _, mode = await tenant_defaults(defaults)
        seats, fields = seated(terms)
        check_distinct(seats, fields)
        accounts = await connection.execute(ACCOUNT_SUMMARIES, {"tenant_id": tenant_id, "account_ids": seats})
        await opened.pipeline.sync()
        balances = seated_balances(summaries(await accounts.fetchall()), seats, terms.currency, fields)
        config = game_config(terms.stake, terms.challenge_raise, len(terms.player_account_ids), rake)
        chain = beacon_chain_for(mode, round_.beacon_chain)
        new = NewRecords(terms, config, chain, table_id=round_.table_id, round_number=played + 1)
        body = await write_new_game(connection, keys, clock, tenant_id, round_.claim, new, balances)
        await connection.execute(TABLE_ROUND_DEALT, {"tenant_id": tenant_id, "table_id": round_.table_id})
    return Answer(CREATED, body.encode(), replayed=False)


def _check_last_round(last: tuple[Any, ...] | None, tenant_id: str, clock: Clock, *, caught_up: bool) -> None:
    """The previous round must have ended; DeadlinePassed if it has not but its deadline has passed (and it
    was not caught up already)."""
    if last is None:
        return
    game_id, status, deadline_at, pending, round_number = last
    if status not in ("open", "in_progress"):
        return
    if not caught_up and not pending and deadline_at is not None and deadline_at <= clock.now:
        raise DeadlinePassed(tenant_id, game_id)
    raise RoundInProgress(f"round {round_number} ({game_id}) has not ended")
