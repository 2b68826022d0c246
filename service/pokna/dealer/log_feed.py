"""What the public log's sequencer reads of the dealer's games: the finished ones not yet logged, oldest
first, and the mark that they are (pokna.public_log.sequencer), on its async connection. Off every action's
path: an action never reads or writes `game.log_index`, and the partial index the read uses holds only
games awaiting their leaf.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection

_AWAITING = (
    "FROM game WHERE tenant_id = %(tenant_id)s AND log_index IS NULL AND status IN ('settled', 'cancelled') "
    "AND proof IS NOT NULL"  # filtered before the LIMIT: a batch of such games never stalls a log
)
_ANY_AWAITING = f"SELECT 1 {_AWAITING} LIMIT 1"
_GAMES_AWAITING = (
    f"SELECT id, status, pot_account_id, proof, ended_at {_AWAITING} ORDER BY ended_at, id LIMIT %(limit)s"
)
_MARK_LOGGED = (
    "UPDATE game SET log_index = %(leaf_index)s WHERE tenant_id = %(tenant_id)s AND id = %(game_id)s"
)


@dataclass(frozen=True)
class FinishedGame:
    game_id: str
    status: str
    pot_account_id: str
    proof: dict[str, Any]
    ended_at: datetime


async def games_awaiting_log(
    connection: AsyncConnection[Any], tenant_id: str, limit: int
) -> list[FinishedGame]:
    """Oldest first, so a backlog drains in the order games ended and none waits behind newer ones."""
    rows = await (
        await connection.execute(_GAMES_AWAITING, {"tenant_id": tenant_id, "limit": limit})
    ).fetchall()
    return [FinishedGame(*row) for row in rows]


async def any_game_awaiting_log(connection: AsyncConnection[Any], tenant_id: str) -> bool:
    """One probe of the partial index: a pass skips a tenant with nothing to log without taking its lock."""
    return await (await connection.execute(_ANY_AWAITING, {"tenant_id": tenant_id})).fetchone() is not None


async def mark_logged(
    connection: AsyncConnection[Any], tenant_id: str, leaf_indexes: Mapping[str, int]
) -> None:
    async with connection.cursor() as cursor:
        await cursor.executemany(
            _MARK_LOGGED,
            [
                {"tenant_id": tenant_id, "game_id": game_id, "leaf_index": index}
                for game_id, index in leaf_indexes.items()
            ],
        )
