"""Which database a URL or an engine speaks: the one place in the service that asks.

Everything that differs between the two backends is chosen from this answer once, when the engine and
its sessions are made (`pokna.storage`); business code never asks again.
"""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session


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


def accepts_writes(session: Session) -> bool:
    """False on a PostgreSQL that is read-only: a standby not yet promoted (a single-host URL naming it,
    or a demoted primary) answers reads but refuses every write, so the service is not ready there."""
    if backend_of(session.get_bind().engine) is not Backend.POSTGRESQL:
        return True
    read_only: str = session.execute(text("SHOW transaction_read_only")).scalar_one()
    return read_only == "off"
