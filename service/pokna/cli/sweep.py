"""`pokna sweep`: apply every passed deadline, so no game holds money forever. Run it from cron."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Annotated

import typer

from pokna.cli.app import app
from pokna.cli.command_database import command_database
from pokna.db.types import utc_now
from pokna.dealer.service import Clock
from pokna.drand import BeaconRelays
from pokna.public_log.sequencer import LogSigner
from pokna.service_keys import load_service_keys
from pokna.settings import get_settings
from pokna.sweep import SweepReport
from pokna.sweep import sweep as sweep_all


@app.command()
def sweep(as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False) -> None:
    """Time out every passed turn, cancel games never started, purge old idempotency keys and delivered webhook events, sign moved ledger heads, log finished games."""
    settings = get_settings()
    clock = Clock(now=utc_now(), open_game_ttl=timedelta(seconds=settings.open_game_ttl_seconds))
    keys = load_service_keys(settings)

    async def swept() -> SweepReport:
        async with command_database() as database:
            return await sweep_all(
                database,
                keys,
                clock,
                webhook_retention=timedelta(seconds=settings.webhook_retention_seconds),
                beacon=BeaconRelays.for_settings(settings),
                log_signer=LogSigner(settings.public_log_origin, keys.signing_key),
            )

    report = asyncio.run(swept())
    if as_json:
        typer.echo(json.dumps(vars(report)))
    else:
        typer.echo(
            f"{report.games} game(s) past a deadline, {report.timeouts} timeout(s) applied, "
            f"{report.rolls_resolved} waiting beacon roll(s) resolved, "
            f"{report.idempotency_records_purged} expired idempotency record(s) purged, "
            f"{report.checkpoints_taken} ledger checkpoint(s) signed, "
            f"{report.webhook_events_purged} delivered webhook event(s) purged, "
            f"{report.games_logged} finished game(s) added to the public logs"
        )
