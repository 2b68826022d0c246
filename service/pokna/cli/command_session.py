"""How a command holds the configured database: one engine for the command's lifetime, and its work in
`unit_of_work`, the same commit-or-roll-back block the sweep uses and the request session mirrors.

Most commands are one unit of work (`command_session`); a command that needs several transactions (the
sweep: one per game) takes the session factory (`command_sessions`) and opens each with `unit_of_work`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from sqlalchemy.orm import Session, sessionmaker

from pokna.cli.errors import EXIT_USAGE, CommandError
from pokna.db import embedded
from pokna.db.engine import make_engine, make_sessionmaker, unit_of_work
from pokna.errors import NotFound
from pokna.settings import get_settings
from pokna.tenants import service as tenants

_started: list[embedded.EmbeddedCluster] = []  # the embedded clusters this command started for itself


def configured_database_url() -> str:
    """POKNA_DATABASE_URL, or the data directory's private PostgreSQL, started if it is stopped (see
    `leave_started_clusters` for what happens to it after the command)."""
    settings = get_settings()
    if settings.database_url:
        return settings.database_url
    cluster = embedded.cluster_of(settings.data_dir, settings.postgres_bindir)
    if cluster.ensure_running():
        _started.append(cluster)
    return cluster.url


def leave_started_clusters(succeeded: bool) -> None:
    """After a command that started the embedded PostgreSQL for itself: left running for the next command,
    and said so in one line, if the command succeeded; stopped if it failed (its error is the one line)."""
    while _started:
        cluster = _started.pop()
        if succeeded:
            typer.echo(
                f"started the embedded PostgreSQL in {cluster.pgdata}; it stays up for the next command "
                "(`pokna db stop` stops it)",
                err=True,
            )
        else:
            with contextlib.suppress(embedded.EmbeddedDatabaseError):  # never instead of the command's error
                cluster.stop()


@contextmanager
def command_sessions() -> Iterator[sessionmaker[Session]]:
    engine = make_engine(configured_database_url())
    try:
        yield make_sessionmaker(engine)
    finally:
        engine.dispose()


@contextmanager
def command_session() -> Iterator[Session]:
    with command_sessions() as sessions, unit_of_work(sessions) as session:
        yield session


def require_tenant(session: Session, tenant_id: str) -> None:
    """A command about one tenant names an unknown one, rather than answer with nothing: a wrong argument,
    so exit 2, like any usage mistake."""
    try:
        tenants.get_tenant(session, tenant_id)
    except NotFound:
        raise CommandError(
            f"no tenant {tenant_id!r}", "`pokna tenants list` shows the tenants", exit_code=EXIT_USAGE
        ) from None
