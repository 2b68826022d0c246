"""What a database error means to the operator: the server cannot be reached, the schema is missing or
behind (both common after a fresh install or an upgrade of Pokna), ahead (a newer release migrated it), or
something else.

Only the error path pays for this diagnosis (it imports Alembic to read the schema revision); a command
that works never does.
"""

from __future__ import annotations

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from pokna.cli.database_url import configured_database_url
from pokna.cli.errors import first_line
from pokna.db import migrate
from pokna.db.engine import make_engine
from pokna.settings import get_settings


def _unreachable_hint() -> str:
    if get_settings().embedded_database:
        return "the embedded PostgreSQL in POKNA_DATA_DIR: see its server.log"
    return "check POKNA_DATABASE_URL and that the database server is up"


def redacted(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def _reason(error: BaseException) -> str:
    return first_line(str(getattr(error, "orig", None) or error))


def describe_database_error(error: BaseException) -> str:
    url = configured_database_url()
    try:
        engine = make_engine(url)
        try:
            revision = migrate.current_revision(engine)
        finally:
            engine.dispose()
    except SQLAlchemyError as failed:
        return f"cannot reach the database {redacted(url)}: {_reason(failed)} ({_unreachable_hint()})"
    head = migrate.head_revision()
    if revision is not None and not migrate.is_known(revision):
        return str(migrate.NewerSchema(revision, f"the database {redacted(url)}"))
    if revision != head:
        state = "has no Pokna schema" if revision is None else f"is at schema {revision}, not {head}"
        return f"the database {redacted(url)} {state} (run `pokna db upgrade`)"
    return f"the database {redacted(url)} refused the command: {_reason(error)} ({_unreachable_hint()})"
