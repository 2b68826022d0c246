"""`pokna webhooks deliver`: the worker that fans the outbox out to endpoints and sends what is due.

Run as many copies as you like (one per container): they share the work without ever sending one
delivery twice at once. SIGTERM and SIGINT finish the attempt in flight, then stop.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated

import typer

from pokna.cli.app import app
from pokna.cli.command_database import MaxSecondsOption, run_until_stopped
from pokna.db.aio import AsyncDatabase
from pokna.service_keys import load_service_keys
from pokna.settings import get_settings
from pokna.webhooks.service import DeliveryPolicy, WorkerReport, run_worker

webhooks_app = typer.Typer(help="Webhooks: the worker that delivers them.", no_args_is_help=True)
app.add_typer(webhooks_app, name="webhooks")


@webhooks_app.command("deliver")
def deliver(
    drain: Annotated[
        bool, typer.Option("--drain", help="Stop once nothing is left to send (failed deliveries aside).")
    ] = False,
    max_seconds: MaxSecondsOption = None,
    poll_seconds: Annotated[
        float,
        typer.Option(
            "--poll-seconds",
            min=0.01,
            max=3600,
            help="How long to wait when nothing is due (at most an hour).",
        ),
    ] = 1.0,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Deliver webhooks until stopped (or, with --drain, until the outbox is empty)."""
    settings = get_settings()
    keys = load_service_keys(settings)

    async def work(database: AsyncDatabase, should_stop: Callable[[], bool]) -> WorkerReport:
        policy = DeliveryPolicy.from_settings(settings)
        return await run_worker(
            database, keys.seed_key, policy, poll_seconds=poll_seconds, drain=drain, should_stop=should_stop
        )

    report = run_until_stopped(work, max_seconds)
    if as_json:
        typer.echo(json.dumps(vars(report)))
    else:
        typer.echo(
            f"{report.events_dispatched} event(s) fanned out, {report.attempts} attempt(s): "
            f"{report.delivered} delivered, {report.retries_scheduled} to retry, {report.failed} failed"
        )
