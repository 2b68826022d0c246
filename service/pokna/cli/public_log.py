"""`pokna log sequence`: the worker that appends finished games to their tenants' public logs.

Run one or several (they take each tenant's log in turn, never twice at once); a pass a second keeps a
game's wait for its leaf to about a second (pokna.public_log.sequencer). SIGTERM and SIGINT finish the pass
in flight, then stop.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated

import typer

from pokna.cli.app import app
from pokna.cli.command_database import MaxSecondsOption, run_until_stopped
from pokna.db.aio import AsyncDatabase
from pokna.public_log.sequencer import BATCH, LogSigner
from pokna.public_log.worker import INTERVAL_SECONDS, run_sequencer, sequence_once
from pokna.service_keys import load_service_keys
from pokna.settings import get_settings

log_app = typer.Typer(help="The public logs of finished games: the sequencer.", no_args_is_help=True)
app.add_typer(log_app, name="log")


@log_app.command("sequence")
def sequence(
    once: Annotated[bool, typer.Option("--once", help="One pass over every tenant, then stop.")] = False,
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            min=0.05,
            max=86400,
            help="Seconds from one pass's start to the next's (at most a day).",
        ),
    ] = INTERVAL_SECONDS,
    batch: Annotated[int, typer.Option("--batch", min=1, help="Games one pass appends to one log.")] = BATCH,
    max_seconds: MaxSecondsOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Append finished games to the public logs and sign their checkpoints, every second until stopped."""
    settings = get_settings()
    signer = LogSigner(settings.public_log_origin, load_service_keys(settings).signing_key)

    async def work(database: AsyncDatabase, should_stop: Callable[[], bool]) -> int:
        if once:
            return await sequence_once(database, signer, batch=batch)
        return await run_sequencer(database, signer, should_stop, interval, batch)

    appended = run_until_stopped(work, max_seconds)
    if as_json:
        typer.echo(json.dumps({"games_logged": appended}))
    else:
        typer.echo(f"{appended} finished game(s) added to the public logs")
