"""An API key checked as the service checks it (pokna.tenants.authentication, on a driver connection), for
tests that hold only the sessions' factory."""

from __future__ import annotations

import asyncio

from psycopg import AsyncConnection
from psycopg.conninfo import make_conninfo
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.backend import driver_parameters
from pokna.tenants import authentication


def tenant_of_key(sessions: sessionmaker[Session], digest: str) -> str:
    """The tenant of the key with this digest, or Unauthorized."""
    engine = sessions.kw["bind"]
    assert isinstance(engine, Engine)
    conninfo = make_conninfo("", **driver_parameters(engine))

    async def check() -> str:
        async with await AsyncConnection.connect(conninfo, autocommit=True) as connection:
            return await authentication.authenticate(connection, digest)

    return asyncio.run(check())
