"""Reading games. A read is also a touch: a deadline passed since the last one is applied first, in the
read's own transaction (see deadlines.caught_up), so what a client reads is the game as of now."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from pokna import ledger
from pokna.dealer.deadlines import Clock, caught_up
from pokna.dealer.schemas import GameEventOut, GameOut, GameProofOut
from pokna.dealer.store import game_store
from pokna.dealer.view import event_out, game_out, proof_out
from pokna.errors import InvalidRequest
from pokna.paging import Page, page_of
from pokna.service_keys import ServiceKeys


def read_game(session: Session, keys: ServiceKeys, clock: Clock, tenant_id: str, game_id: str) -> GameOut:
    game, seats = caught_up(session, keys, clock, tenant_id, game_id)
    if seats is None:
        seats = game_store(session).seats_of(session, tenant_id, game.id)
    wallets = ledger.account_summaries(session, tenant_id, [seat.account_id for seat in seats])
    return game_out(game, seats, {account_id: wallet.balance for account_id, wallet in wallets.items()})


def game_events(
    session: Session,
    keys: ServiceKeys,
    clock: Clock,
    tenant_id: str,
    game_id: str,
    *,
    limit: int,
    starting_after: str | None,
) -> Page[GameEventOut]:
    """The game's events in order, `limit` at a time; the cursor is the last event's `seq`."""
    game, _ = caught_up(session, keys, clock, tenant_id, game_id)
    try:
        after = int(starting_after) if starting_after else 0
    except ValueError:
        raise InvalidRequest("not a cursor from this list", field="query.starting_after") from None
    events = game_store(session).event_page(session, tenant_id, game.id, after, limit + 1)
    return page_of([event_out(event) for event in events], limit, lambda event: str(event.root.seq))


def game_proof(
    session: Session, keys: ServiceKeys, clock: Clock, tenant_id: str, game_id: str
) -> GameProofOut:
    """The signed proof once the game is over; before that, only the signed commitment."""
    game, _ = caught_up(session, keys, clock, tenant_id, game_id)
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
