"""Reading games. A read is also a touch: a deadline passed since the last one is applied first, so what a
client reads is the game as of now. The read finds it (`DeadlinePassed`, raised before anything is
read further), its route applies it on the async path every write takes (pokna.dealer.game_action.catch_up),
then reads again, as committed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from pokna import ledger
from pokna.dealer.locked import Clock
from pokna.dealer.records import GameRecord, OverdueGames
from pokna.dealer.schemas import GameEventOut, GameOut, GameProofOut
from pokna.dealer.store import game_store
from pokna.dealer.view import event_out, game_out, proof_out
from pokna.errors import InvalidRequest
from pokna.paging import Page, page_of


class DeadlinePassed(Exception):
    """The game read has a deadline passed at the clock's `now`: catch it up, then read it again."""

    def __init__(self, tenant_id: str, game_id: str) -> None:
        super().__init__(f"game {game_id} has a deadline passed")
        self.tenant_id = tenant_id
        self.game_id = game_id


def as_of(session: Session, clock: Clock | None, tenant_id: str, game_id: str) -> GameRecord:
    """The game as committed, one query and no lock; DeadlinePassed if one of its deadlines has passed by
    `clock.now` (None: as committed, caught up or not). A waiting beacon roll is not a deadline to apply."""
    game = game_store(session).get_game(session, tenant_id, game_id)
    deadline = game.turn_deadline_at
    if clock is not None and game.pending_roll is None and deadline is not None and deadline <= clock.now:
        raise DeadlinePassed(tenant_id, game_id)
    return game


def due_games(session: Session, tenant_id: str, now: datetime, limit: int) -> list[tuple[str, str]]:
    """(tenant id, game id) of up to `limit` of the tenant's games with a deadline passed at `now`, the
    longest overdue first: what `pokna sweep` applies, each with pokna.dealer.game_action.apply_due in a
    transaction of its own."""
    return game_store(session).due_games(session, tenant_id, now, limit)


def overdue_games(session: Session, now: datetime) -> OverdueGames:
    """What `pokna sweep` (or the next request touching each game) has still to apply at `now`, across
    tenants: for `/metrics`, where an operator sees the sweeper stopped or the beacon's relays gone."""
    return game_store(session).overdue_games(session, now)


def read_game(session: Session, clock: Clock | None, tenant_id: str, game_id: str) -> GameOut:
    game = as_of(session, clock, tenant_id, game_id)
    seats = game_store(session).seats_of(session, tenant_id, game.id)
    wallets = ledger.account_summaries(session, tenant_id, [seat.account_id for seat in seats])
    return game_out(game, seats, {account_id: wallet.balance for account_id, wallet in wallets.items()})


def game_events(
    session: Session,
    clock: Clock | None,
    tenant_id: str,
    game_id: str,
    *,
    limit: int,
    starting_after: str | None,
) -> Page[GameEventOut]:
    """The game's events in order, `limit` at a time; the cursor is the last event's `seq`."""
    game = as_of(session, clock, tenant_id, game_id)
    try:
        after = int(starting_after) if starting_after else 0
    except ValueError:
        raise InvalidRequest("not a cursor from this list", field="query.starting_after") from None
    events = game_store(session).event_page(session, tenant_id, game.id, after, limit + 1)
    return page_of([event_out(event) for event in events], limit, lambda event: str(event.root.seq))


def game_proof(session: Session, clock: Clock | None, tenant_id: str, game_id: str) -> GameProofOut:
    """The signed proof once the game is over; before that, only the signed commitment."""
    game = as_of(session, clock, tenant_id, game_id)
    return proof_out(game)


@dataclass(frozen=True)
class AuditedGame:
    """What an audit bundle says of a game: its status, its pot account and, once it ended, its proof."""

    game_id: str
    status: str
    pot_account_id: str
    proof: dict[str, Any] | None


def games_for_audit(session: Session, tenant_id: str, game_ids: Sequence[str]) -> dict[str, AuditedGame]:
    """The tenant's games among `game_ids`, as stored (an audit reads, it does not apply deadlines)."""
    return {
        game.id: AuditedGame(game.id, game.status, game.pot_account_id, game.proof)
        for game in game_store(session).games_by_ids(session, tenant_id, game_ids)
    }
