"""`pokna serve`: migrate the database, then run the API under uvicorn."""

from __future__ import annotations

import logging
from typing import Annotated

import typer
import uvicorn

from pokna.cli.app import app
from pokna.db import migrate
from pokna.logs import configure_logging
from pokna.service_keys import load_service_keys
from pokna.settings import get_settings

log = logging.getLogger("pokna.serve")


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Interface to bind (default POKNA_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind (default POKNA_PORT).")] = None,
    workers: Annotated[int | None, typer.Option(help="Worker processes (default POKNA_WORKERS).")] = None,
    migrate_first: Annotated[
        bool, typer.Option("--migrate/--no-migrate", help="Apply pending migrations before serving.")
    ] = True,
) -> None:
    """Run the Pokna API. Every worker is stateless; scale out by running more of them on one database."""
    settings = get_settings()
    configure_logging(settings.log_level)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    url = settings.resolved_database_url
    if migrate_first:
        migrate.upgrade(url)
    load_service_keys(settings)  # fail fast on bad keys; in development, make them once, before any worker
    host = host or settings.host
    port = port or settings.port
    typer.echo(f"Pokna is serving on http://{host}:{port}  (database: {_redacted(url)})", err=True)
    uvicorn.run(
        "pokna.api.asgi:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers or settings.workers,
        log_config=None,
        access_log=False,
    )


def _redacted(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
