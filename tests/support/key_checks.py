"""An API key checked as the service checks it (pokna.tenants.authentication, on a driver connection), for
tests that hold only the sessions' factory."""

from __future__ import annotations

import asyncio

from psycopg import AsyncConnection
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.backend import conninfo_of
from pokna.tenants import authentication


def tenant_of_key(sessions: sessionmaker[Session], digest: str) -> str:
    """The tenant of the key with this digest, or Unauthorized."""
    engine = sessions.kw["bind"]
    assert isinstance(engine, Engine)
    conninfo = conninfo_of(engine.url.render_as_string(hide_password=False))

    async def check() -> str:
        async with await AsyncConnection.connect(conninfo, autocommit=True) as connection:
            return await authentication.authenticate(connection, digest)

    return asyncio.run(check())
