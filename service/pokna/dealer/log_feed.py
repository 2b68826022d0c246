"""What the public log's sequencer reads of the dealer's games: the finished ones not yet logged, oldest
first, and the mark that they are (pokna.public_log.sequencer). Off every action's path: an action never
reads or writes `game.log_index`, and the partial index the read uses holds only games awaiting their leaf.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.orm import Session

from pokna.db.models.game import Game

_game = cast(Table, Game.__table__)
FINISHED = ("settled", "cancelled")


@dataclass(frozen=True)
class FinishedGame:
    game_id: str
    status: str
    pot_account_id: str
    proof: dict[str, Any]
    ended_at: datetime


def games_awaiting_log(session: Session, tenant_id: str, limit: int) -> list[FinishedGame]:
    """Oldest first, so a backlog drains in the order games ended and none waits behind newer ones."""
    rows = session.execute(
        select(_game.c.id, _game.c.status, _game.c.pot_account_id, _game.c.proof, _game.c.ended_at)
        .where(
            _game.c.tenant_id == tenant_id,
            _game.c.log_index.is_(None),
            _game.c.status.in_(FINISHED),
            _game.c.proof.is_not(None),  # filtered before the LIMIT: a batch of such games never stalls a log
        )
        .order_by(_game.c.ended_at, _game.c.id)
        .limit(limit)
    )
    return [FinishedGame(row.id, row.status, row.pot_account_id, row.proof, row.ended_at) for row in rows]


def any_game_awaiting_log(session: Session, tenant_id: str) -> bool:
    """One probe of the partial index: a pass skips a tenant with nothing to log without taking its lock."""
    probe = select(_game.c.id).where(
        _game.c.tenant_id == tenant_id,
        _game.c.log_index.is_(None),
        _game.c.status.in_(FINISHED),
        _game.c.proof.is_not(None),
    )
    return session.execute(probe.limit(1)).first() is not None


def mark_logged(session: Session, tenant_id: str, leaf_indexes: Mapping[str, int]) -> None:
    if not leaf_indexes:
        return
    session.execute(
        update(_game)
        .where(_game.c.tenant_id == tenant_id, _game.c.id == bindparam("game_id"))
        .values(log_index=bindparam("leaf_index")),
        [{"game_id": game_id, "leaf_index": index} for game_id, index in leaf_indexes.items()],
    )
