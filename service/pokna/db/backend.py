"""Which database a URL or an engine speaks: the one place in the service that asks.

Everything that differs between the two backends is chosen from this answer once, when the engine and
its sessions are made (`pokna.storage`); business code never asks again.
"""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import Engine
from sqlalchemy.engine import make_url


class Backend(StrEnum):
    POSTGRESQL = "postgresql"
    SQLITE = "sqlite"


class UnsupportedDatabase(ValueError):
    code = "unsupported_database"


def backend_of(target: str | Engine) -> Backend:
    """The backend of a SQLAlchemy URL or engine; anything but PostgreSQL and SQLite is refused."""
    name = make_url(target).get_backend_name() if isinstance(target, str) else target.dialect.name
    try:
        return Backend(name)
    except ValueError:
        raise UnsupportedDatabase(
            f"Pokna runs on PostgreSQL or SQLite, not {name!r} (POKNA_DATABASE_URL)"
        ) from None
