"""The one database Pokna runs on: PostgreSQL (14 or newer), an operator's or the private embedded one.

A URL for any other database is refused here, once, where the engine is made; nothing else asks.
"""

from __future__ import annotations

from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session


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


def accepts_writes(session: Session) -> bool:
    """False on a PostgreSQL that is read-only: a standby not yet promoted (a single-host URL naming it,
    or a demoted primary) answers reads but refuses every write, so the service is not ready there."""
    read_only: str = session.execute(text("SHOW transaction_read_only")).scalar_one()
    return read_only == "off"
