"""How a background command (`pokna sweep`, `pokna webhooks deliver`, `pokna log sequence`) holds the
configured database: psycopg's pool (pokna.db.aio), one per process, open while the command's event loop
runs, with a command's waits (`Waits()`: no limit on a statement). No session and no thread: the same
road as the API's requests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pokna.cli.database_url import configured_database_url
from pokna.db.aio import AsyncDatabase
from pokna.db.engine import Waits, make_engine

CONNECTIONS = 1
"""Each of these commands works one step at a time, on one connection."""


@asynccontextmanager
async def command_database() -> AsyncIterator[AsyncDatabase]:
    """The pool, open for the block. The engine only reads the URL as SQLAlchemy does (its hosts, user and
    options: pokna.db.aio.conninfo_of); nothing connects through it."""
    engine = make_engine(configured_database_url())
    try:
        database = AsyncDatabase.for_engine(engine, Waits(), size=CONNECTIONS, overflow=0)
        async with database.opened():
            yield database
    finally:
        engine.dispose()
