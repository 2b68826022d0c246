"""Alembic environment. The URL always comes from the caller (pokna.db.migrate) or POKNA_DATABASE_URL."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, text

import pokna.db.models  # noqa: F401  (registers every table on the metadata)
from pokna.db import distribution, embedded, migrate
from pokna.db.base import Base
from pokna.db.engine import make_engine
from pokna.db.migrate import MIGRATION_LOCK
from pokna.settings import get_settings

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    settings = get_settings()
    return embedded.database_url(settings.database_url, settings.data_dir, settings.postgres_bindir)


def _run_locked(connection: Connection) -> None:
    """Replicas that start together on one PostgreSQL migrate one at a time: the first applies the
    migrations, the others wait on this lock (held to the end of the migration transaction) and then
    find nothing left to do.

    On a Citus coordinator the same transaction then places whatever the distribution map says and is not
    yet placed, once the schema is at its head (docs/scaling.md): a new table is distributed by the
    upgrade that creates it. A Citus worker changes nothing (`pokna.db.migrate.NotTheCoordinator`)."""
    with context.begin_transaction():
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        citus = distribution.has_citus(connection)
        if citus and distribution.is_worker(connection):
            # Only the coordinator changes the schema. A worker already at the revision asked for has
            # nothing to do (what `pokna serve` on the workers runs at start); anything else is refused
            # before any change.
            revision = migrate.current_revision(connection)
            if revision is not None and _asks_for(revision):
                return
            raise migrate.NotTheCoordinator(revision)
        if citus:
            for setting in distribution.CITUS_SETTINGS:
                connection.execute(text(setting))
        context.run_migrations()
        if citus and migrate.current_revision(connection) == migrate.head_revision():
            distribution.distribute(connection)


def _asks_for(revision: str) -> bool:
    """Whether the command's destination is `revision` itself; a command with none (Alembic's own
    `current`) changes nothing either."""
    try:
        asked = context.get_revision_argument()
    except KeyError:
        return True
    return migrate.resolves_to(asked, revision)


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
    )


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    existing = config.attributes.get("connection")
    if existing is not None:
        _configure(existing)
        _run_locked(existing)
        return
    engine = make_engine(_url())
    try:
        with engine.connect() as connection:
            _configure(connection)
            _run_locked(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
