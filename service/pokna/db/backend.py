"""The one database Pokna runs on: PostgreSQL (14 or newer), an operator's or the private embedded one.

A URL for any other database is refused here, once, where the engine is made; nothing else asks.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection
from sqlalchemy import Engine
from sqlalchemy.engine import make_url


class UnsupportedDatabase(ValueError):
    code = "unsupported_database"


def require_postgresql(target: str | Engine) -> None:
    """Refuse a SQLAlchemy URL or engine that is not PostgreSQL, naming the setting."""
    name = make_url(target).get_backend_name() if isinstance(target, str) else target.dialect.name
    if name != "postgresql":
        raise UnsupportedDatabase(f"Pokna runs on PostgreSQL, not {name!r}")


def driver_parameters(engine: Engine) -> dict[str, str | int]:
    """What the engine passes psycopg to connect (hosts, ports, user, database, libpq options of its
    URL): for the connections the hot paths open with the driver itself (pokna.db.aio)."""
    _, parameters = engine.dialect.create_connect_args(engine.url)
    # `context` is the dialect's adapters for its own connections, not a connection option.
    return {
        name: value if isinstance(value, int) else str(value)
        for name, value in parameters.items()
        if value is not None and name != "context"
    }


async def accepts_writes(connection: AsyncConnection[Any]) -> bool:
    """False on a PostgreSQL that is read-only: a standby not yet promoted (a single-host URL naming it,
    or a demoted primary) answers reads but refuses every write, so the service is not ready there."""
    row = await (await connection.execute("SHOW transaction_read_only")).fetchone()
    return row is not None and row[0] == "off"
