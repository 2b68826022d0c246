"""The hot paths' connections: psycopg 3 in async mode, no SQLAlchemy, no thread hop.

A game action is the service's most frequent write and is sent as driver text in pipelines (BEGIN
queued with the first statements, COMMIT with the last), so it costs three round trips and no thread.
Everything else keeps its `Session` (pokna.db.engine); both reach the same database with the same waits
(statement and idle-in-transaction timeouts, connect timeout, the same hosts of a multi-host URL).

The idle connections are kept in a plain list rather than a pool object with its own tasks and locks:
those belong to one event loop, and a process may run the app on more than one (a test client without a
lifespan starts a loop per request). How many connections are in use at once is bounded before a request
gets here, by the database gate (pokna.api.database_gate), which counts every request that uses the
database, sync or async. A pooled connection the server has closed (restart, crash, failover) is dropped
at checkout without a round trip, with every other idle one, as pokna.db.engine does for its pool.
"""

from __future__ import annotations

import select
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg.conninfo import make_conninfo
from sqlalchemy import Engine, event

from pokna.db.backend import driver_parameters
from pokna.db.engine import Waits


def conninfo_of(engine: Engine, waits: Waits) -> str:
    """The engine's database as a libpq connection string: the same hosts, user and options the engine
    connects with, and the same waits."""
    params = driver_parameters(engine)
    params["connect_timeout"] = waits.connect
    options = [
        f"-c {name}={seconds * 1000}"
        for name, seconds in (
            ("statement_timeout", waits.statement),
            ("idle_in_transaction_session_timeout", waits.idle_in_transaction),
        )
        if seconds is not None
    ]
    if options:
        params["options"] = " ".join(options)
    return make_conninfo("", **params)


class AsyncDatabase:
    def __init__(self, conninfo: str, keep_idle: int) -> None:
        self._conninfo = conninfo
        self._keep_idle = keep_idle
        self._idle: list[AsyncConnection[Any]] = []

    @classmethod
    def for_engine(cls, engine: Engine, waits: Waits) -> AsyncDatabase:
        pool = engine.pool
        keep_idle = getattr(pool, "size", lambda: 5)() + max(0, getattr(pool, "_max_overflow", 10))
        database = cls(conninfo_of(engine, waits), keep_idle)
        # One lifecycle with the engine's own connections: disposing of the engine (to pick up a changed
        # server setting, after a failover) lets go of these too.
        event.listen(engine, "engine_disposed", lambda _engine: database.drop_idle())
        return database

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """An autocommit connection (a transaction is `async with connection.transaction()`), given back
        idle afterwards, or closed if it broke or was left inside a transaction."""
        connection = await self._checkout()
        try:
            yield connection
        finally:
            await self._give_back(connection)

    async def fresh(self) -> AsyncConnection[Any]:
        """A new connection, for a request whose first statement found its pooled one dead."""
        self.drop_idle()
        return await AsyncConnection.connect(self._conninfo, autocommit=True)

    async def _checkout(self) -> AsyncConnection[Any]:
        while self._idle:
            connection = self._idle.pop()
            if _hung_up(connection):
                await connection.close()
                self.drop_idle()  # they died with it: the next ones connect afresh
                break
            return connection
        return await AsyncConnection.connect(self._conninfo, autocommit=True)

    async def _give_back(self, connection: AsyncConnection[Any]) -> None:
        idle = connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        if connection.closed or connection.broken or not idle or len(self._idle) >= self._keep_idle:
            await connection.close()
        else:
            self._idle.append(connection)

    def drop_idle(self) -> None:
        """Forget every idle connection (closing a socket needs no loop: psycopg closes it at once)."""
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.pgconn.finish()

    def close(self) -> None:
        self.drop_idle()


def _hung_up(connection: AsyncConnection[Any]) -> bool:
    if connection.closed or connection.broken:
        return True
    poller = select.poll()
    poller.register(connection.pgconn.socket, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))
