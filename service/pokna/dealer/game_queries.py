"""The game store's plain Core statements: the reads, the pages and the tables, none of them run under a
game's lock on an action's path.

pokna.dealer.store_postgres builds on these the statements an action runs under the game's lock, each one
round trip; together they are the one game store (pokna.dealer.store.GameStore).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, and_, func, select
from sqlalchemy.orm import Session

from pokna.db.models.game import Game, GameSeat
from pokna.dealer.records import (
    ACTION_EVENT,
    GAME_COLUMNS,
    MONEY_EVENT,
    MUTABLE_GAME_COLUMNS,
    EventRecord,
    GameRecord,
    OverdueGames,
    RollRecord,
    SeatRecord,
)

_game = cast(Table, Game.__table__)
_seat = cast(Table, GameSeat.__table__)

_SEAT_COLUMNS = (_seat.c.seat, _seat.c.account_id, _seat.c.client_seed, _seat.c.client_seed_source)
PROOF_EVENTS = (ACTION_EVENT, MONEY_EVENT)


class GameQueries:
    """The part of pokna.dealer.store.GameStore that no action runs under its lock."""

    def games_by_ids(self, session: Session, tenant_id: str, game_ids: Sequence[str]) -> list[GameRecord]:
        rows = session.execute(select(_game).where(_game.c.tenant_id == tenant_id, _game.c.id.in_(game_ids)))
        return [GameRecord(**row._mapping) for row in rows]

    def due_games(self, session: Session, tenant_id: str, now: datetime, limit: int) -> list[tuple[str, str]]:
        query = (
            select(_game.c.tenant_id, _game.c.id)
            .where(
                _game.c.tenant_id == tenant_id,
                _game.c.turn_deadline_at.is_not(None),
                _game.c.turn_deadline_at <= now,
            )
            .order_by(_game.c.turn_deadline_at)
            .limit(limit)
        )
        return [(row.tenant_id, row.id) for row in session.execute(query)]

    def overdue_games(self, session: Session, now: datetime) -> OverdueGames:
        """Across tenants, on the deadline's index: in a healthy service few games are past theirs."""
        waiting_roll = _game.c.pending_roll.is_not(None)
        passed = _game.c.turn_deadline_at <= now
        games = session.execute(
            select(
                func.count().filter(~waiting_roll).label("deadlines"),
                func.min(_game.c.turn_deadline_at).filter(~waiting_roll).label("oldest_deadline_at"),
                func.count().filter(waiting_roll).label("rolls"),
                func.min(_game.c.turn_deadline_at).filter(waiting_roll).label("oldest_roll_deadline_at"),
            ).where(passed)
        ).one()
        held = session.scalar(
            select(func.count())
            .select_from(_seat)
            .join(_game, and_(_game.c.tenant_id == _seat.c.tenant_id, _game.c.id == _seat.c.game_id))
            .where(passed, waiting_roll)
        )
        return OverdueGames(
            deadlines=int(games.deadlines),
            oldest_deadline_at=games.oldest_deadline_at,
            rolls=int(games.rolls),
            oldest_roll_deadline_at=games.oldest_roll_deadline_at,
            wallets_held=int(held or 0),
        )


# --- rows, as the action's statements send them --------------------------------------------------------------


def game_row(game: GameRecord) -> dict[str, Any]:
    return {name: getattr(game, name) for name in GAME_COLUMNS}


def mutable_game_values(game: GameRecord) -> dict[str, Any]:
    return {name: getattr(game, name) for name in MUTABLE_GAME_COLUMNS}


def seat_row(tenant_id: str, game_id: str, seat: SeatRecord) -> dict[str, Any]:
    return {
        "tenant_id": tenant_id,
        "game_id": game_id,
        "seat": seat.seat,
        "account_id": seat.account_id,
        "client_seed": seat.client_seed,
        "client_seed_source": seat.client_seed_source,
    }


def event_rows(tenant_id: str, game_id: str, events: Sequence[EventRecord]) -> list[dict[str, Any]]:
    return [
        {
            "tenant_id": tenant_id,
            "game_id": game_id,
            "seq": event.seq,
            "kind": event.kind,
            "payload": event.payload,
            "occurred_at": event.occurred_at,
        }
        for event in events
    ]


def roll_rows(tenant_id: str, game_id: str, rolls: Sequence[RollRecord]) -> list[dict[str, Any]]:
    return [
        {
            "tenant_id": tenant_id,
            "game_id": game_id,
            "nonce": roll.nonce,
            "seat": roll.seat,
            "purpose": roll.purpose,
            "face": roll.face,
            "color": roll.color,
            "rolled_at": roll.rolled_at,
        }
        for roll in rolls
    ]
