"""Games past their deadline, as the background work reads them on the async road: the sweep's list of a
tenant's due games (each then applied by pokna.dealer.action.game_action.apply_due in a transaction of its own),
and `/metrics`' count across tenants. Both on the deadline's index: in a healthy service few games are
past theirs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg import AsyncConnection

from pokna_verify.invariant import present

_DUE = (
    "SELECT id FROM game WHERE tenant_id = %(tenant_id)s AND turn_deadline_at IS NOT NULL "
    "AND turn_deadline_at <= %(now)s ORDER BY turn_deadline_at LIMIT %(limit)s"
)
_OVERDUE = (
    "SELECT count(*) FILTER (WHERE pending_roll IS NULL), "
    "min(turn_deadline_at) FILTER (WHERE pending_roll IS NULL), "
    "count(*) FILTER (WHERE pending_roll IS NOT NULL), "
    "min(turn_deadline_at) FILTER (WHERE pending_roll IS NOT NULL) "
    "FROM game WHERE turn_deadline_at <= %(now)s"
)
_HELD = (
    "SELECT count(*) FROM game_seat AS seat JOIN game "
    "ON game.tenant_id = seat.tenant_id AND game.id = seat.game_id "
    "WHERE game.turn_deadline_at <= %(now)s AND game.pending_roll IS NOT NULL"
)


@dataclass(frozen=True, slots=True)
class OverdueGames:
    """Games past their deadline that nobody has moved on yet, across tenants (for `/metrics`).

    `deadlines`: turns (or starts) whose deadline passed and whose default action is not applied yet;
    `rolls`: beacon-mode rolls still waiting after their deadline (the round's due time plus
    pokna.dealer.beacon_rolls.SWEEP_AFTER_DUE), and `wallets_held` the seated wallets those rolls hold."""

    deadlines: int
    oldest_deadline_at: datetime | None
    rolls: int
    oldest_roll_deadline_at: datetime | None
    wallets_held: int


async def due_games(
    connection: AsyncConnection[Any], tenant_id: str, now: datetime, limit: int
) -> list[tuple[str, str]]:
    """(tenant id, game id) of up to `limit` of the tenant's games with a deadline passed at `now`, the
    longest overdue first: what `pokna sweep` applies."""
    found = await connection.execute(_DUE, {"tenant_id": tenant_id, "now": now, "limit": limit})
    return [(tenant_id, row[0]) for row in await found.fetchall()]


async def overdue_games(connection: AsyncConnection[Any], now: datetime) -> OverdueGames:
    """What `pokna sweep` (or the next request touching each game) has still to apply at `now`, across
    tenants, and the wallets the waiting rolls hold: for `/metrics`, where an operator sees the sweeper
    stopped or the beacon's relays gone."""
    games = await (await connection.execute(_OVERDUE, {"now": now})).fetchone()
    held = await (await connection.execute(_HELD, {"now": now})).fetchone()
    games = present(games, "an aggregate answers one row")
    held = present(held, "an aggregate answers one row")
    return OverdueGames(
        deadlines=int(games[0]),
        oldest_deadline_at=_in_utc(games[1]),
        rolls=int(games[2]),
        oldest_roll_deadline_at=_in_utc(games[3]),
        wallets_held=int(held[0]),
    )


def _in_utc(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.astimezone(UTC)
