"""Housekeeping for `pokna sweep`, across domains: the deadlines of abandoned games (what the next request
touching a game would do lazily, done in bulk), expired idempotency records, ledger checkpoints, and
webhook events whose deliveries are all finished, once older than the retention.

It asks each domain through its public functions and runs no query of its own, every step on a
connection of the process's one pool (pokna.db.aio): no session, no thread. A game's deadlines are
applied as any request applies them, each game in a transaction of its own on the dealer's async path
(pokna.dealer.action.game_action.apply_due).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from pokna.db.aio import AsyncDatabase
from pokna.dealer.service import Clock, Dealer, DueApplied, apply_due, due_games
from pokna.dealer.writes import StaleBalances
from pokna.drand import BeaconRelays
from pokna.errors import PoknaError
from pokna.idempotency.service import purge_expired
from pokna.ledger.checkpoint import checkpoint_moved_heads
from pokna.public_log.sequencer import BATCH, LogSigner
from pokna.public_log.worker import sequence_pass
from pokna.service_keys import ServiceKeys
from pokna.tenants.service import tenant_ids_async
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


async def sweep(
    database: AsyncDatabase,
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
    async with database.connection() as connection:
        tenant_ids = await tenant_ids_async(connection)
    dealer = Dealer(keys)
    games = timeouts = rolls = purged = webhook_events = 0
    for tenant_id in tenant_ids:
        async with database.connection() as connection:
            due = await due_games(connection, tenant_id, clock.now, batch)
        games += len(due)
        for _, game_id in due:
            applied = await _apply_due(database, dealer, clock, tenant_id, game_id, beacon)
            timeouts += applied.timeouts
            rolls += applied.rolls_resolved
        async with database.connection() as connection:
            purged += await purge_expired(connection, clock.now, tenant_id)
            webhook_events += await purge_finished_events(connection, tenant_id, clock.now, webhook_retention)
    async with database.connection() as connection:
        checkpoints = await checkpoint_moved_heads(connection, keys.signing_key)
        logged = 0
        if log_signer is not None:
            logged = await sequence_pass(connection, log_signer, lambda: clock.now, BATCH)
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
    database: AsyncDatabase,
    dealer: Dealer,
    clock: Clock,
    tenant_id: str,
    game_id: str,
    beacon: BeaconRelays | None,
) -> DueApplied:
    """One due game, in a transaction of its own on a connection of its own (a server error closes the
    connection, pokna.dealer.action.action_transaction: the pool replaces it)."""
    async with database.connection() as connection:
        try:
            return await apply_due(connection, dealer, clock, tenant_id, game_id, beacon)
        except (PoknaError, StaleBalances):  # one game that cannot move now holds back no other
            log.warning("sweep: game %s skipped", game_id, exc_info=True)
            return DueApplied(0, 0)
