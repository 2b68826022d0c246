"""Housekeeping for `pokna sweep`, across domains: the deadlines of abandoned games (what the next request
touching a game would do lazily, done in bulk), expired idempotency records, ledger checkpoints, and
webhook events whose deliveries are all finished, once older than the retention.

It asks each domain through its public functions and runs no query of its own. A game's deadlines are
applied as any request applies them, each game in a transaction of its own on the dealer's async path
(pokna.dealer.game_action.apply_due), on one connection of the sweep's own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from psycopg import AsyncConnection
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.aio import conninfo_of
from pokna.db.engine import Waits, unit_of_work
from pokna.dealer.service import Clock, Dealer, apply_due, due_games
from pokna.dealer.writes import StaleBalances
from pokna.drand import BeaconRelays
from pokna.errors import PoknaError
from pokna.idempotency.service import purge_expired
from pokna.ledger.checkpoint import checkpoint_moved_heads
from pokna.public_log.sequencer import LogSigner
from pokna.public_log.worker import sequence_all
from pokna.service_keys import ServiceKeys
from pokna.tenants import service as tenants
from pokna.webhooks.service import purge_finished_events

WEBHOOK_RETENTION = timedelta(days=7)
log = logging.getLogger("pokna.sweep")


@dataclass(frozen=True)
class SweepReport:
    games: int
    timeouts: int
    rolls_resolved: int
    idempotency_records_purged: int
    checkpoints_taken: int
    webhook_events_purged: int
    games_logged: int = 0


def sweep(
    sessions: sessionmaker[Session],
    keys: ServiceKeys,
    clock: Clock,
    batch: int = 500,
    webhook_retention: timedelta = WEBHOOK_RETENTION,
    beacon: BeaconRelays | None = None,
    log_signer: LogSigner | None = None,
) -> SweepReport:
    """Tenant by tenant, so that every statement runs where one tenant's rows are (docs/scaling.md); each
    game in its own transaction, so one stuck game cannot hold back the rest. `batch` bounds each
    tenant's games per sweep. `beacon`: the relays a beacon-mode game's waiting roll reads its round from
    (without them, such rolls wait for the next sweep that has them, or the next action on the game).
    `log_signer`: with it, a pass of the public log's sequencer too (its own worker runs it every second;
    the sweep's pass keeps the logs growing where only the sweep runs)."""
    with unit_of_work(sessions) as session:
        tenant_ids = tenants.tenant_ids(session)
    games = timeouts = rolls = purged = webhook_events = 0
    for tenant_id in tenant_ids:
        with unit_of_work(sessions) as session:
            due = due_games(session, tenant_id, clock.now, batch)
        games += len(due)
        if due:
            applied = asyncio.run(_apply_due(sessions, keys, clock, tenant_id, due, beacon))
            timeouts += applied[0]
            rolls += applied[1]
        with unit_of_work(sessions) as session:
            purged += purge_expired(session, clock.now, tenant_id)
        while True:
            with unit_of_work(sessions) as session:
                purged_now = purge_finished_events(session, tenant_id, clock.now, webhook_retention)
            webhook_events += purged_now
            if purged_now == 0:
                break
    with unit_of_work(sessions) as session:
        checkpoints = checkpoint_moved_heads(session, keys.signing_key)
    logged = 0 if log_signer is None else sequence_all(sessions, log_signer, lambda: clock.now)
    return SweepReport(
        games=games,
        timeouts=timeouts,
        rolls_resolved=rolls,
        idempotency_records_purged=purged,
        checkpoints_taken=checkpoints,
        webhook_events_purged=webhook_events,
        games_logged=logged,
    )


async def _apply_due(
    sessions: sessionmaker[Session],
    keys: ServiceKeys,
    clock: Clock,
    tenant_id: str,
    due: Sequence[tuple[str, str]],
    beacon: BeaconRelays | None,
) -> tuple[int, int]:
    """The tenant's due games, each applied in a transaction of its own: (timeouts, rolls resolved)."""
    engine = sessions.kw["bind"]
    assert isinstance(engine, Engine)
    dealer = Dealer(keys)
    timeouts = rolls = 0
    connection = await AsyncConnection.connect(conninfo_of(engine, Waits()), autocommit=True)
    try:
        for _, game_id in due:
            if connection.closed:  # a server error closes it (pokna.dealer.action_transaction)
                connection = await AsyncConnection.connect(conninfo_of(engine, Waits()), autocommit=True)
            try:
                applied = await apply_due(connection, dealer, clock, tenant_id, game_id, beacon)
            except (PoknaError, StaleBalances):  # one game that cannot move now holds back no other
                log.warning("sweep: game %s skipped", game_id, exc_info=True)
                continue
            timeouts += applied.timeouts
            rolls += applied.rolls_resolved
    finally:
        await connection.close()
    return timeouts, rolls
