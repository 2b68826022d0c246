"""Alembic, driven from code: the CLI, the server's start-up and the tests all migrate the same way."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text
from sqlalchemy.pool import NullPool

from pokna.db.engine import is_sqlite, make_engine

MIGRATIONS_DIR = Path(__file__).resolve().parents[3] / "migrations"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


# Any constant will do, as long as every Pokna process uses the same one.
MIGRATION_LOCK = 0x506F6B6E61  # "Pokna"


def upgrade(url: str, revision: str = "head") -> None:
    _run_locked(url, lambda config: command.upgrade(config, revision))


def downgrade(url: str, revision: str) -> None:
    _run_locked(url, lambda config: command.downgrade(config, revision))


def _run_locked(url: str, migrate: Callable[[Config], None]) -> None:
    """Replicas that start together on one PostgreSQL migrate one at a time: the first applies the
    migrations, the others wait on an advisory lock and then find nothing left to do. (SQLite's own
    write lock, taken by BEGIN IMMEDIATE, already serializes its writers.)"""
    config = alembic_config(url)
    if is_sqlite(url):
        migrate(config)
        return
    engine = make_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
            connection.commit()
            try:
                config.attributes["connection"] = connection
                migrate(config)
                connection.commit()
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
                connection.commit()
    finally:
        engine.dispose()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def is_at_head(engine: Engine) -> bool:
    return current_revision(engine) == head_revision()
