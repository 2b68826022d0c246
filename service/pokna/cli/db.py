"""`pokna db ...`: the schema is Alembic's; these commands drive it against POKNA_DATABASE_URL."""

from __future__ import annotations

from typing import Annotated

import typer

from pokna.cli.app import app
from pokna.db import migrate
from pokna.db.engine import make_engine
from pokna.settings import get_settings

db_app = typer.Typer(help="Database schema: upgrade, downgrade, current.", no_args_is_help=True)
app.add_typer(db_app, name="db")


@db_app.command()
def upgrade(revision: Annotated[str, typer.Argument(help="Target revision.")] = "head") -> None:
    """Apply migrations up to REVISION (default: head)."""
    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    migrate.upgrade(settings.resolved_database_url, revision)
    typer.echo(f"database at {revision}")


# `-1` is a revision here, not an option.
@db_app.command(context_settings={"ignore_unknown_options": True})
def downgrade(revision: Annotated[str, typer.Argument(help="Target revision, e.g. -1 or base.")]) -> None:
    """Revert migrations down to REVISION."""
    migrate.downgrade(get_settings().resolved_database_url, revision)
    typer.echo(f"database at {revision}")


@db_app.command()
def current() -> None:
    """Print the database's revision and whether it is the head."""
    engine = make_engine(get_settings().resolved_database_url)
    try:
        revision = migrate.current_revision(engine)
    finally:
        engine.dispose()
    head = migrate.head_revision()
    marker = " (head)" if revision == head else f" (head is {head})"
    typer.echo(f"{revision or 'empty'}{marker}")
