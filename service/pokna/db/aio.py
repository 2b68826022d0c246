"""The hot paths' connections: psycopg 3 in async mode, no SQLAlchemy, no thread hop.

A game action is the service's most frequent write and is sent as driver text in pipelines (BEGIN
queued with the first statements, COMMIT with the last), so it costs three round trips and no thread.
That is why these connections come from psycopg's own pool (`psycopg_pool.AsyncConnectionPool`) and not
from SQLAlchemy's async engine: the code speaks psycopg (pipelines, `AsyncConnection`), and SQLAlchemy's
engine would add an adapter around every connection and a greenlet around every call for nothing it uses.
The background jobs run on a pool of this kind too, one per process, with a command's waits
(pokna.cli.command_database), and every other command on one connection of it. An API process holds
one such pool for its requests (POKNA_DATABASE_POOL_SIZE, and _OVERFLOW more under load) and a small one
for its probes and scrapes (pokna.runtime), and no SQLAlchemy engine: the URL is read into a libpq
connection string once (pokna.db.backend.conninfo_of).

A pool's tasks and locks belong to one event loop, so the pool is opened by whoever runs the loop for
long: the app's lifespan (`opened`), closed at shutdown; each worker process opens its own. A caller in
another loop (a test client without a lifespan starts one per request, a test's `asyncio.run`) gets a
connection of its own for the block instead. How many connections are in use at once is bounded before
a request gets here, by the database gate (pokna.api.database_gate), which has a place for each
connection the pool may open, so the pool's own wait only ever covers opening one.

Connections are checked at checkout without the pool's `check` callback (a round trip per checkout, and a
second's back-off after a failed one): one the server has closed (restart, crash, failover) is seen
without a round trip (`_hung_up`), and every idle one is dropped with it (`drain`), so the next ones
connect afresh, through every host of a multi-host URL in turn. One given back inside a transaction or broken is closed
at once, without the rollback the pool would send (a round trip a cancelled request may not finish), and
the pool replaces it. A connection the pool cannot open is retried for RECONNECT_SECONDS only, then
opened again on demand. While the database is away a request waits up to the connect timeout (per host)
for a connection, then fails with psycopg_pool's `PoolTimeout`, an `OperationalError`: a 503.
"""

from __future__ import annotations

import asyncio
import select
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool

from pokna import metrics
from pokna.db.engine import Waits
from pokna.db.watchdog import watch_async
from pokna_verify.invariant import present

Pool = AsyncConnectionPool[AsyncConnection[Any]]

RECONNECT_SECONDS = 1.0
"""How long the pool retries a connection it failed to open (twice, this far apart) before it gives up
and leaves the next one to the next request's demand (as each request connected itself before issue 35):
psycopg_pool's doubling back-off (1, 2, 4 s...) would otherwise keep a service whose database
came back waiting for its next turn."""


class AsyncDatabase:
    def __init__(
        self, conninfo: str, min_size: int, max_size: int, connect_seconds: float, answer: float | None = None
    ) -> None:
        self._conninfo = conninfo
        self._answer = answer
        self._min_size = min_size
        self._max_size = max_size
        self._connect_seconds = connect_seconds
        self._pool: Pool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def for_conninfo(cls, conninfo: str, waits: Waits, size: int, overflow: int) -> AsyncDatabase:
        """`size` connections kept open, up to `overflow` more under load; `conninfo` with `waits` added."""
        hosts = len(str(conninfo_to_dict(conninfo).get("host", "")).split(","))
        return cls(
            make_conninfo(conninfo, **waits.libpq_parameters()),
            size,
            size + overflow,
            waits.connect * hosts,
            waits.answer,
        )

    @asynccontextmanager
    async def opened(self) -> AsyncIterator[None]:
        """The pool, open for the block in the running loop (the app's lifespan). It connects in the
        background: a database that is down does not stop the app from starting."""
        pool: Pool = AsyncConnectionPool(
            self._conninfo,
            kwargs={"autocommit": True},
            configure=self._watch,
            min_size=self._min_size,
            max_size=self._max_size,
            timeout=self._connect_seconds,
            reconnect_timeout=RECONNECT_SECONDS,
            name="pokna-hot-paths",
            open=False,
        )
        await pool.open()
        self._pool, self._loop = pool, asyncio.get_running_loop()
        try:
            yield
        finally:
            if self._pool is pool:  # not another app's on the same runtime, opened since
                self._pool = self._loop = None
            await pool.close()

    def connection(self) -> AbstractAsyncContextManager[AsyncConnection[Any]]:
        """An autocommit connection (a transaction is `async with connection.transaction()`), given back
        to the pool afterwards, or closed if it broke or was left inside a transaction."""
        return _Checkout(self)

    @asynccontextmanager
    async def _own_connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """For a caller in another loop than the pool's, or before it opened: a connection of its own."""
        connection = await AsyncConnection.connect(self._conninfo, autocommit=True)
        await self._watch(connection)
        try:
            yield connection
        finally:
            await connection.close()

    async def _watch(self, connection: AsyncConnection[Any]) -> None:
        """Each new connection is abandoned if a statement of its goes unanswered (pokna.db.watchdog)."""
        if self._answer is not None:
            watch_async(connection, self._answer)

    async def _checkout(self, pool: Pool) -> AsyncConnection[Any]:
        connection = await pool.getconn()
        if not _hung_up(connection):
            return connection
        await pool.putconn(connection)
        await pool.drain()  # they died with it: the next ones connect afresh
        return await pool.getconn()


class _Checkout(AbstractAsyncContextManager[AsyncConnection[Any]]):
    """One of the pool's connections for the block, or a connection of its own for a caller in another
    loop than the pool's (decided on entering, in the caller's loop). A class rather than an
    `asynccontextmanager` generator: every request to the database goes through one (issue 44)."""

    def __init__(self, database: AsyncDatabase) -> None:
        self._database = database
        self._pool: Pool | None = None
        self._connection: AsyncConnection[Any] | None = None
        self._own: AbstractAsyncContextManager[AsyncConnection[Any]] | None = None

    async def __aenter__(self) -> AsyncConnection[Any]:
        database = self._database
        pool = database._pool
        if pool is None or database._loop is not asyncio.get_running_loop():
            self._own = database._own_connection()
            return await self._own.__aenter__()
        self._pool, self._connection = pool, await database._checkout(pool)
        metrics.db_connections_checked_out(1)
        return self._connection

    async def __aexit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        if self._own is not None:
            await self._own.__aexit__(kind, error, traceback)
            return
        pool = present(self._pool, "a connection checked out before it is given back")
        connection = present(self._connection, "a connection checked out before it is given back")
        metrics.db_connections_checked_out(-1)
        # Shielded: a cancelled request still gives its connection back whole, or the pool would count
        # it as taken for ever.
        await asyncio.shield(_give_back(pool, connection, error))


async def _give_back(pool: Pool, connection: AsyncConnection[Any], error: BaseException | None) -> None:
    """Back to the pool, or closed at once (no round trip: the pool replaces it) if it is inside a
    transaction, or if a database error ended the block: what such an error left on the connection is not
    known (a pipeline it aborted leaves psycopg's memory of the statements it prepared unreliable: seen as
    `prepared statement "_pg3_2" does not exist` on the next request after a Citus worker's outage)."""
    if (
        isinstance(error, psycopg.Error)
        or connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
    ):
        connection.pgconn.finish()
    await pool.putconn(connection)


def _hung_up(connection: AsyncConnection[Any]) -> bool:
    """A server that stops, crashes or is killed closes its sockets, and an idle pooled connection has
    nothing to read unless the server said goodbye (a FATAL notice, then the end of the stream): anything
    readable, or a hang-up, means it is gone. A peer that vanished without a word is the keepalives'
    (pokna.db.engine.Waits)."""
    if connection.closed or connection.broken:
        return True
    poller = select.poll()
    poller.register(connection.pgconn.socket, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))
