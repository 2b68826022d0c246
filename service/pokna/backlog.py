"""What the background work has left late, across domains, for the backlog gauges of `/metrics`
(pokna.api.metrics_backlog): each domain asked through its public functions, like `pokna sweep` does, in
one read-only transaction on an async connection.

The sweeper and the webhooks worker are processes of their own with no `/metrics`; a stopped one counts
nothing. What they leave undone stays in the database, where any API process can read it.
"""

from __future__ import annotations

from datetime import datetime

from pokna import ledger
from pokna.db.aio import AsyncDatabase
from pokna.db.types import utc_now
from pokna.dealer import service as dealer
from pokna.metrics.backlog import Backlog, Late
from pokna.webhooks.service import webhook_backlog


async def read_backlog(database: AsyncDatabase) -> Backlog:
    """`database`: the runtime's monitoring pool (Runtime.monitoring), never the requests'."""
    now = utc_now()
    async with database.connection() as connection, connection.transaction():
        await connection.execute("SET TRANSACTION READ ONLY")
        games = await dealer.overdue_games(connection, now)
        webhooks = await webhook_backlog(connection, now)
        unsigned_at = await ledger.oldest_unsigned_at(connection)
    return Backlog(
        game_deadlines=Late(games.deadlines, _age(now, games.oldest_deadline_at)),
        beacon_rolls=Late(games.rolls, _age(now, games.oldest_roll_deadline_at)),
        wallets_held_by_overdue_rolls=games.wallets_held,
        webhook_fan_out=Late(webhooks.fan_out.count, _age(now, webhooks.fan_out.since)),
        webhook_delivery=Late(webhooks.delivery.count, _age(now, webhooks.delivery.since)),
        ledger_unsigned_seconds=_age(now, unsigned_at),
    )


def _age(now: datetime, since: datetime | None) -> float:
    return 0.0 if since is None else max(0.0, (now - since).total_seconds())
