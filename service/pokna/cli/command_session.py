"""How a command holds the configured database: one engine for the command's lifetime, and its work in
`unit_of_work`, the commit-or-roll-back block. The background jobs hold a pool instead
(pokna.cli.command_database).

Most commands are one unit of work (`command_session`); a command that needs several (`pokna audit
bundle`) takes the session factory (`command_sessions`) and opens each with `unit_of_work`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session, sessionmaker

from pokna.cli.database_url import configured_database_url
from pokna.cli.errors import EXIT_USAGE, CommandError
from pokna.db.engine import make_engine, make_sessionmaker, unit_of_work
from pokna.errors import NotFound
from pokna.tenants import service as tenants


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
