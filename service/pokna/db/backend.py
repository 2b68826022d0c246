"""The one database Pokna runs on: PostgreSQL (14 or newer), an operator's or the private embedded one.

A URL for any other database is refused here, once, where it is read (into the pools' connection string,
or Alembic's engine); nothing else asks.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection
from psycopg.conninfo import make_conninfo
from sqlalchemy.engine import make_url


class UnsupportedDatabase(ValueError):
    code = "unsupported_database"


def require_postgresql(url: str) -> None:
    """Refuse a SQLAlchemy URL that is not PostgreSQL's, naming the setting."""
    name = make_url(url).get_backend_name()
    if name != "postgresql":
        raise UnsupportedDatabase(f"Pokna runs on PostgreSQL, not {name!r}")


def conninfo_of(url: str) -> str:
    """A SQLAlchemy URL (POKNA_DATABASE_URL) as the libpq connection string psycopg connects with: its hosts,
    ports, user, database and libpq options, read by SQLAlchemy's psycopg dialect (a multi-host URL's
    `?host=a:1&host=b:2` included) so the URL means what it meant to the engine. No engine is made."""
    require_postgresql(url)
    parsed = make_url(url)
    _, parameters = parsed.get_dialect()().create_connect_args(parsed)
    return make_conninfo("", **{name: value for name, value in parameters.items() if value is not None})


async def accepts_writes(connection: AsyncConnection[Any]) -> bool:
    """False on a PostgreSQL that is read-only: a standby not yet promoted (a single-host URL naming it,
    or a demoted primary) answers reads but refuses every write, so the service is not ready there."""
    row = await (await connection.execute("SHOW transaction_read_only")).fetchone()
    return row is not None and row[0] == "off"
