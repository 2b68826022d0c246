"""Tables: a fixed seat order played round after round, the title of Vigo passing clockwise.

A round is dealt in the table's own transaction (the request's session, under the table's row lock, so
rounds are dealt one at a time and `rounds_played` moves with the game it counts): the new game's records
are pokna.dealer.creating's, written through the game store. A previous round whose deadline passed is
caught up first, on the async path (`DeadlinePassed`, as a read: pokna.dealer.reading)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from pokna import ledger
from pokna.db.models.game import GameTable
from pokna.db.types import new_id
from pokna.dealer.announcements import announce_created
from pokna.dealer.creating import (
    NewGame,
    beacon_chain_for,
    check_distinct,
    new_game_records,
    seated,
    seated_balances,
)
from pokna.dealer.errors import RoundInProgress
from pokna.dealer.locked import Clock
from pokna.dealer.rake import RakeTerms, game_config, rake_terms_for
from pokna.dealer.reading import DeadlinePassed
from pokna.dealer.schemas import GameOut, TableOut, TableRoundOut, TableTotalOut
from pokna.dealer.store import game_store
from pokna.dealer.view import game_out
from pokna.outbox import SessionOutbox
from pokna.service_keys import ServiceKeys
from pokna.tenants.settings import default_fairness_mode
from pokna_verify.fairness.beacon import BeaconChain
from pokna_verify.game import round_seating, state_from_dict


@dataclass(frozen=True)
class NewTable:
    account_ids: list[str]
    stake: int
    challenge_raise: int | None = None
    currency: str = "CREDIT"
    turn_timeout_seconds: int = 60
    rake: RakeTerms | None = None  # None: the tenant's default rake terms, fixed for every round now


def create_table(session: Session, tenant_id: str, terms: NewTable, clock: Clock) -> TableOut:
    fields = [f"body.account_ids.{index}" for index in range(len(terms.account_ids))]
    check_seating(session, tenant_id, list(terms.account_ids), terms.currency, fields)
    rake = rake_terms_for(session, tenant_id, terms.rake)
    game_config(terms.stake, terms.challenge_raise, len(terms.account_ids) - 1, rake)
    table = GameTable(
        id=new_id("tbl"),
        tenant_id=tenant_id,
        account_ids=list(terms.account_ids),
        stake=terms.stake,
        challenge_raise=terms.stake if terms.challenge_raise is None else terms.challenge_raise,
        currency=terms.currency,
        turn_timeout_seconds=terms.turn_timeout_seconds,
        rake_bps=rake.bps,
        rake_cap=rake.cap,
        rounds_played=0,
        created_at=clock.now,
    )
    game_store(session).insert_table(session, table)
    return _table_out(session, table)


def read_table(session: Session, tenant_id: str, table_id: str) -> TableOut:
    return _table_out(session, game_store(session).get_table(session, tenant_id, table_id))


def deal_round(
    session: Session,
    keys: ServiceKeys,
    clock: Clock,
    tenant_id: str,
    table_id: str,
    *,
    beacon_chain: BeaconChain | None = None,
    caught_up: bool = False,
) -> GameOut:
    """The next round's game, with the Vigo title passed clockwise. One round at a time. Its fairness
    mode is the tenant's default (`beacon_chain` as in pokna.dealer.creating.create_game).
    DeadlinePassed when the previous round's deadline has passed, unless it was `caught_up` already:
    whoever touches a game after its deadline applies it, dealing the next round included."""
    store = game_store(session)
    table = store.get_table(session, tenant_id, table_id, for_update=True)
    rounds = store.games_of_table(session, table.tenant_id, table.id)
    last = rounds[-1] if rounds else None
    if last is not None and last.status in ("open", "in_progress"):
        deadline = last.turn_deadline_at
        if not caught_up and last.pending_roll is None and deadline is not None and deadline <= clock.now:
            raise DeadlinePassed(tenant_id, last.id)
        raise RoundInProgress(f"round {last.round_number} ({last.id}) has not ended")
    terms = _new_game_for_round(table, table.rounds_played)
    account_ids, fields = seated(terms)
    balances = check_seating(session, tenant_id, account_ids, terms.currency, fields)
    rake = terms.rake or rake_terms_for(session, tenant_id, None)
    config = game_config(terms.stake, terms.challenge_raise, len(terms.player_account_ids), rake)
    chain = beacon_chain_for(default_fairness_mode(session, tenant_id), beacon_chain)
    game_id = new_id("game")
    pot = ledger.open_account(
        session,
        tenant_id=tenant_id,
        kind=ledger.AccountKind.GAME_POT,
        currency=terms.currency,
        external_id=game_id,
    )
    game, seats, events = new_game_records(
        keys,
        clock,
        tenant_id,
        terms,
        config,
        chain,
        game_id,
        pot.id,
        table_id=table.id,
        round_number=table.rounds_played + 1,
    )
    store.insert_game(session, game, seats, events)
    announce_created(SessionOutbox(session), game, seats, balances)
    table.rounds_played += 1
    store.save_table(session, table)
    return game_out(game, seats, balances)


def check_seating(
    session: Session, tenant_id: str, account_ids: list[str], currency: str, fields: list[str]
) -> dict[str, int]:
    """Each seat a distinct player wallet of this tenant, in the game's currency; `fields` name them.
    The wallets' balances, by account id."""
    check_distinct(account_ids, fields)
    return seated_balances(
        ledger.account_summaries(session, tenant_id, account_ids), account_ids, currency, fields
    )


def _new_game_for_round(table: GameTable, round_index: int) -> NewGame:
    order = [table.account_ids[position] for position in round_seating(len(table.account_ids), round_index)]
    return NewGame(
        vigo_account_id=order[0],
        player_account_ids=order[1:],
        stake=table.stake,
        challenge_raise=table.challenge_raise,
        currency=table.currency,
        turn_timeout_seconds=table.turn_timeout_seconds,
        rake=RakeTerms(table.rake_bps, table.rake_cap),
    )


def _table_out(session: Session, table: GameTable) -> TableOut:
    """The table with every round so far and each seat's running total (paid out minus paid in)."""
    store = game_store(session)
    totals = dict.fromkeys(table.account_ids, 0)
    rounds = []
    games = store.games_of_table(session, table.tenant_id, table.id)
    seats_of = store.seats_of_games(session, table.tenant_id, [game.id for game in games])
    for game in games:
        state = state_from_dict(game.state)
        seats = seats_of[game.id]
        for seat in seats:
            totals[seat.account_id] += state.paid_out[seat.seat] - state.paid_in[seat.seat]
        rounds.append(
            TableRoundOut(
                round_number=game.round_number,
                game_id=game.id,
                status=game.status,
                vigo_account_id=seats[0].account_id,
                outcome=state.outcome.reason.value if state.outcome else None,
            )
        )
    return TableOut(
        id=table.id,
        object="table",
        account_ids=table.account_ids,
        stake=table.stake,
        challenge_raise=table.challenge_raise,
        rake=RakeTerms(table.rake_bps, table.rake_cap).out(),
        currency=table.currency,
        turn_timeout_seconds=table.turn_timeout_seconds,
        rounds_played=table.rounds_played,
        rounds=rounds,
        totals=[TableTotalOut(account_id=account, net=net) for account, net in totals.items()],
        created_at=table.created_at,
    )
