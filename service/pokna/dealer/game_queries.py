"""The game store's plain Core statements: the reads, the pages and the tables, none of them run under a
game's lock on an action's path.

pokna.dealer.store_postgres builds on these the statements an action runs under the game's lock, each one
round trip; together they are the one game store (pokna.dealer.store.GameStore).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Table, select
from sqlalchemy.orm import Session

from pokna.db.models.game import Game, GameSeat
from pokna.dealer.records import (
    ACTION_EVENT,
    GAME_COLUMNS,
    MONEY_EVENT,
    MUTABLE_GAME_COLUMNS,
    EventRecord,
    GameRecord,
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
