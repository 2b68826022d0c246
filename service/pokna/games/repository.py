"""Every game query lives here."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from pokna.db.models.game import Game, GameEvent, GameRoll, GameSeat, GameTable
from pokna.errors import NotFound

ACTION_EVENT = "action"
MONEY_EVENT = "money_moved"


def get_game(session: Session, tenant_id: str, game_id: str, *, for_update: bool = False) -> Game:
    """Another tenant's game is exactly as absent as a game that does not exist."""
    query = select(Game).where(Game.id == game_id, Game.tenant_id == tenant_id)
    if for_update:
        query = query.with_for_update(key_share=True)
    game = session.scalars(query).one_or_none()
    if game is None:
        raise NotFound(f"no game {game_id}")
    return game


def deadline_passed(session: Session, tenant_id: str, game_id: str, now: datetime) -> bool:
    """Raises NotFound like get_game, so a lazy deadline check never hides an unknown game."""
    row = session.execute(
        select(Game.turn_deadline_at).where(Game.id == game_id, Game.tenant_id == tenant_id)
    ).one_or_none()
    if row is None:
        raise NotFound(f"no game {game_id}")
    deadline: datetime | None = row.turn_deadline_at
    return deadline is not None and deadline <= now


def seats_of(session: Session, game_id: str) -> list[GameSeat]:
    return list(session.scalars(select(GameSeat).where(GameSeat.game_id == game_id).order_by(GameSeat.seat)))


def rolls_of(session: Session, game_id: str) -> list[GameRoll]:
    return list(session.scalars(select(GameRoll).where(GameRoll.game_id == game_id).order_by(GameRoll.nonce)))


def events_of_kinds(session: Session, game_id: str, kinds: Sequence[str]) -> list[GameEvent]:
    query = (
        select(GameEvent)
        .where(GameEvent.game_id == game_id, GameEvent.kind.in_(kinds))
        .order_by(GameEvent.seq)
    )
    return list(session.scalars(query))


def event_page(session: Session, game_id: str, after_seq: int, limit: int) -> list[GameEvent]:
    query = (
        select(GameEvent)
        .where(GameEvent.game_id == game_id, GameEvent.seq > after_seq)
        .order_by(GameEvent.seq)
        .limit(limit)
    )
    return list(session.scalars(query))


def due_game_ids(session: Session, now: datetime, limit: int) -> list[tuple[str, str]]:
    query = (
        select(Game.tenant_id, Game.id)
        .where(Game.turn_deadline_at.is_not(None), Game.turn_deadline_at <= now)
        .order_by(Game.turn_deadline_at)
        .limit(limit)
    )
    return [(row.tenant_id, row.id) for row in session.execute(query)]


def get_table(session: Session, tenant_id: str, table_id: str, *, for_update: bool = False) -> GameTable:
    query = select(GameTable).where(GameTable.id == table_id, GameTable.tenant_id == tenant_id)
    if for_update:
        query = query.with_for_update(key_share=True)
    table = session.scalars(query).one_or_none()
    if table is None:
        raise NotFound(f"no table {table_id}")
    return table


def games_of_table(session: Session, table_id: str) -> Sequence[Game]:
    return session.scalars(select(Game).where(Game.table_id == table_id).order_by(Game.round_number)).all()
