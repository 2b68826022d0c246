"""Alembic, driven from code: the CLI, the server's start-up and the tests all migrate the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from psycopg import AsyncConnection
from sqlalchemy import Connection, Engine

MIGRATIONS_DIR = Path(__file__).resolve().parents[3] / "migrations"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


class NotTheCoordinator(RuntimeError):
    """A migration asked of a Citus worker. The API may read and write through the workers
    (docs/scaling.md, "Serving through the workers"), but only the coordinator changes the schema: on a
    worker a migration would fail part-way, or change that node alone."""

    def __init__(self, revision: str | None) -> None:
        super().__init__(
            f"this database is a Citus worker's (at {revision or 'no revision'}): only the coordinator "
            "changes the schema (run `pokna db upgrade` with POKNA_DATABASE_URL naming the coordinator; "
            "a server on the workers starts once the schema is at the head, or with --no-migrate)"
        )


# Any constant will do, as long as every Pokna process uses the same one (migrations/env.py takes it).
MIGRATION_LOCK = 0x506F6B6E61  # "Pokna"


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


def head_revision() -> str | None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return ScriptDirectory.from_config(config).get_current_head()


def current_revision(bind: Engine | Connection) -> str | None:
    if isinstance(bind, Engine):
        with bind.connect() as connection:
            return current_revision(connection)
    return MigrationContext.configure(bind).get_current_revision()


# Alembic's own reader (MigrationContext) logs two INFO lines each time it is set up: a readiness probe
# every few seconds would fill the log with them. The revision is one row of one table.
_HAS_REVISION = "SELECT to_regclass('alembic_version') IS NOT NULL"
_REVISION = "SELECT version_num FROM alembic_version LIMIT 1"


async def schema_revision(connection: AsyncConnection[Any]) -> str | None:
    """The revision seen through `connection` (which proves the database answers), read without Alembic
    (which logs at every read)."""
    has = await (await connection.execute(_HAS_REVISION)).fetchone()
    if has is None or not has[0]:
        return None
    row = await (await connection.execute(_REVISION)).fetchone()
    return None if row is None else row[0]
