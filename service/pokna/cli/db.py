"""`pokna db ...`: the schema is Alembic's; these commands drive it against POKNA_DATABASE_URL, or the
embedded PostgreSQL of the data directory (started if it is stopped; `pokna db stop` stops it)."""

from __future__ import annotations

from typing import Annotated

import typer

from pokna.cli.app import app
from pokna.cli.database_url import configured_database_url
from pokna.cli.errors import CommandError
from pokna.db import embedded, migrate, sqlstates
from pokna.db.engine import make_engine
from pokna.settings import get_settings

db_app = typer.Typer(
    help="Database schema: upgrade, downgrade, current; stop the embedded PostgreSQL.", no_args_is_help=True
)
app.add_typer(db_app, name="db")


@db_app.command()
def upgrade(revision: Annotated[str, typer.Argument(help="Target revision.")] = "head") -> None:
    """Apply migrations up to REVISION (default: head)."""
    from sqlalchemy.exc import DBAPIError

    try:
        migrate.upgrade(configured_database_url(), revision)
    except DBAPIError as error:
        # A migration that waits a bounded time for its lock (0025_posting_created_at) gives up behind a
        # long reader; the generic answer ("not at head: run `pokna db upgrade`") would hide why.
        if error.orig is None or sqlstates.sqlstate_of(error.orig) != sqlstates.LOCK_NOT_AVAILABLE:
            raise
        raise CommandError(
            "`pokna db upgrade` gave up waiting for a table another session is using, and applied nothing "
            "of the migration that waited",
            "stop the API, the sweeper and any export or audit job, then run `pokna db upgrade` again: "
            "docs/operations.md",
        ) from error
    typer.echo(f"database at {revision}")


# `-1` is a revision here, not an option.
@db_app.command(context_settings={"ignore_unknown_options": True})
def downgrade(revision: Annotated[str, typer.Argument(help="Target revision, e.g. -1 or base.")]) -> None:
    """Revert migrations down to REVISION."""
    migrate.downgrade(configured_database_url(), revision)
    typer.echo(f"database at {revision}")


@db_app.command()
def current() -> None:
    """Print the database's revision and whether it is the head."""
    engine = make_engine(configured_database_url())
    try:
        revision = migrate.current_revision(engine)
    finally:
        engine.dispose()
    head = migrate.head_revision()
    marker = " (head)" if revision == head else f" (head is {head})"
    typer.echo(f"{revision or 'empty'}{marker}")


@db_app.command()
def stop() -> None:
    """Stop the embedded PostgreSQL of the data directory (the next command starts it again)."""
    settings = get_settings()
    if not settings.embedded_database:
        raise CommandError(
            "POKNA_DATABASE_URL names a database of your own: Pokna does not start or stop it",
            "unset POKNA_DATABASE_URL to manage the embedded PostgreSQL in POKNA_DATA_DIR",
        )
    cluster = embedded.cluster_of(settings.data_dir, settings.postgres_bindir)
    server = embedded.serving_pid(settings.data_dir)
    if server is not None:
        # Stopped under it, the server would answer 503 to everything until it is restarted itself.
        raise CommandError(
            f"`pokna serve` (pid {server}) is running on the data directory {settings.data_dir}",
            "stop that server first: it stops the embedded PostgreSQL it started when it exits",
        )
    if not cluster.is_running():
        typer.echo(f"the embedded PostgreSQL in {cluster.pgdata} is not running")
        return
    cluster.stop()
    typer.echo(f"stopped the embedded PostgreSQL in {cluster.pgdata}")
