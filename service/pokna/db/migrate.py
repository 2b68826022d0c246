"""Alembic, driven from code: the CLI, the server's start-up and the tests all migrate the same way."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command, util
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from psycopg import AsyncConnection
from sqlalchemy import Connection, Engine

from pokna.db.engine import make_engine

MIGRATIONS_DIR = Path(__file__).resolve().parents[3] / "migrations"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


class NotTheCoordinator(RuntimeError):
    """A migration asked of a Citus worker. The API may read and write through the workers
    (docs/scaling.md, "Serving through the workers"), but only the coordinator changes the schema: on a
    worker a migration would begin to create the schema on that node alone."""

    def __init__(self, revision: str | None) -> None:
        where = f"a Citus worker's (at {revision or 'no revision'})"
        if revision is not None and not is_known(revision):
            super().__init__(
                f"this database is {where}, a revision this release of Pokna does not know: a newer release "
                "migrated it (serve that release)"
            )
            return
        super().__init__(
            f"this database is {where}: only the coordinator changes the schema (run `pokna db upgrade` "
            "or `downgrade` with POKNA_DATABASE_URL naming the coordinator; a server on the workers starts "
            "once the schema is at the head of its release)"
        )


# Any constant will do, as long as every Pokna process uses the same one (migrations/env.py takes it).
MIGRATION_LOCK = 0x506F6B6E61  # "Pokna"


class NewerSchema(RuntimeError):
    """The database is at a revision this release does not have: a newer release migrated it, and this
    one can move it neither up nor down (Alembic only says it cannot locate the revision, and the advice
    to run `pokna db upgrade` would send the operator round in a circle)."""

    def __init__(self, revision: str, database: str = "the database") -> None:
        super().__init__(
            f"{database} is at schema {revision}, which a newer release of Pokna migrated (this release's "
            f"head is {head_revision()}): run that release, whose `pokna db downgrade` can take it back"
        )


def upgrade(url: str, revision: str = "head") -> None:
    with _from_a_known_revision(url):
        command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    with _from_a_known_revision(url):
        command.downgrade(alembic_config(url), revision)


@contextmanager
def _from_a_known_revision(url: str) -> Iterator[None]:
    """Alembic's refusal of a revision it cannot find is read again here (on that path only) for the
    database's own revision being the unknown one."""
    try:
        yield
    except util.CommandError:
        engine = make_engine(url)
        try:
            revision = current_revision(engine)
        finally:
            engine.dispose()
        if revision is not None and not is_known(revision):
            raise NewerSchema(revision) from None
        raise


def scripts() -> ScriptDirectory:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return ScriptDirectory.from_config(config)


def head_revision() -> str | None:
    return scripts().get_current_head()


def is_known(revision: str) -> bool:
    """Whether this release has the migration `revision` (a newer release's is unknown to it)."""
    return revision in {script.revision for script in scripts().walk_revisions()}


def resolves_to(asked: str | tuple[str, ...] | None, revision: str) -> bool:
    """Whether a command's destination (`head`, `heads`, an id or its unique prefix) is exactly
    `revision`; a relative step (`-1`), `base` or an unknown id is not."""
    found_in = scripts()
    wanted = asked if isinstance(asked, tuple) else (asked,)
    try:
        found = [found_in.get_revision(found_in.as_revision_number(one)) for one in wanted]  # type: ignore[arg-type]
    except util.CommandError:  # a step, a missing or an ambiguous id
        return False
    return [script.revision if script is not None else None for script in found] == [revision]


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
