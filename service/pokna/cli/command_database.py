"""How a command reaches the configured database: on psycopg's async road (pokna.db.aio), with a
command's waits (`Waits()`: no limit on a statement), no session and no thread.

A background command (`pokna sweep`, `pokna webhooks deliver`, `pokna log sequence`) holds psycopg's pool,
one per process, open while its event loop runs (`command_database`; `run_until_stopped` for a worker). A command that does one piece of work
(`pokna tenants`, `pokna ledger`, `pokna audit bundle`) holds one connection in a short event loop of its
own (`run_command`; `streamed_command` for one that writes as it reads); its writes are one transaction
(`async with connection.transaction()`).
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any, TypeVar

import typer
from psycopg import AsyncConnection, OperationalError
from psycopg.conninfo import make_conninfo

from pokna.cli.database_url import configured_database_url
from pokna.cli.errors import EXIT_USAGE, CommandError
from pokna.db.aio import AsyncDatabase
from pokna.db.backend import conninfo_of
from pokna.db.engine import Waits
from pokna.errors import NotFound
from pokna.tenants import service as tenants

Done = TypeVar("Done")

CONNECTIONS = 1
"""A background command works one step at a time, on one connection."""

STOP_GRACE_SECONDS = 10.0
"""How long past `--max-seconds` a worker's step may still run before it is cut: its help says "at the
latest", which a frozen database (statements that are never answered) would otherwise stretch to as long as
the freeze lasts."""

MaxSecondsOption = Annotated[
    float | None,
    typer.Option(
        "--max-seconds",
        min=0,
        max=365 * 24 * 3600,
        help="Stop after this long (at most a year), at the latest: a step the database leaves unanswered (a frozen server) "
        f"is cut {STOP_GRACE_SECONDS:g} s after it, and the command fails.",
    ),
]
"""A worker's `--max-seconds`, which `run_until_stopped` holds."""


@asynccontextmanager
async def command_database() -> AsyncIterator[AsyncDatabase]:
    """The pool, open for the block. The database is reached once first, on a connection of its own: the
    pool connects in the background and logs each failed attempt, so a command started with the database
    out of reach would print those before its one line saying so."""
    await (await command_connection()).close()
    database = AsyncDatabase.for_conninfo(
        conninfo_of(configured_database_url()), Waits(), size=CONNECTIONS, overflow=0
    )
    async with database.opened():
        yield database


async def command_connection() -> AsyncConnection[Any]:
    """An autocommit connection to the configured database, with a command's waits; the caller closes it."""
    conninfo = make_conninfo(conninfo_of(configured_database_url()), **Waits().libpq_parameters())
    return await AsyncConnection.connect(conninfo, autocommit=True)


def run_until_stopped(
    work: Callable[[AsyncDatabase, Callable[[], bool]], Awaitable[Done]], max_seconds: float | None
) -> Done:
    """A worker (`pokna webhooks deliver`, `pokna log sequence`): `work` on the process's pool in an event
    loop of its own, told to stop (its second argument turns true) once SIGTERM or SIGINT arrives or
    `max_seconds` have passed. The signals' handlers are the previous ones again afterwards."""
    stopping: list[int] = []
    deadline = None if max_seconds is None else time.monotonic() + max_seconds

    def should_stop() -> bool:
        return bool(stopping) or (deadline is not None and time.monotonic() >= deadline)

    async def run() -> Done:
        async with command_database() as database:
            if deadline is None:
                return await work(database, should_stop)
            # The deadline is looked at between steps; a step whose statement the database never answers
            # (a command's have no statement timeout) is cut STOP_GRACE_SECONDS past it.
            bound = asyncio.timeout(deadline + STOP_GRACE_SECONDS - time.monotonic())
            try:
                async with bound:
                    return await work(database, should_stop)
            except TimeoutError:
                if not bound.expired():
                    raise
            raise OperationalError(
                f"no answer from the database {STOP_GRACE_SECONDS:g} s past --max-seconds {max_seconds:g}; "
                "the step it was in was cut and rolled back"
            )

    previous = {
        signum: signal.signal(signum, lambda received, _frame: stopping.append(received))
        for signum in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        return asyncio.run(run())
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_command(work: Callable[[AsyncConnection[Any]], Awaitable[Done]]) -> Done:
    """`work` on one connection, in an event loop of the command's own, closed afterwards."""

    async def connected() -> Done:
        async with await command_connection() as connection:
            return await work(connection)

    return asyncio.run(connected())


class Streamed:
    """A command that writes as it reads (`ledger export`, `audit bundle`): one connection in one event
    loop, which its chunks are pulled through one by one (`pulled`); at the end every stream it pulled
    is closed, then the connection, in that loop."""

    def __init__(self, runner: asyncio.Runner, connection: AsyncConnection[Any]) -> None:
        self.runner = runner
        self.connection = connection
        self._streams: list[AsyncIterator[str]] = []

    def run(self, work: Coroutine[Any, Any, Done]) -> Done:
        return self.runner.run(work)

    def pulled(self, chunks: AsyncIterator[str]) -> Iterator[str]:
        self._streams.append(chunks)
        while True:
            try:
                yield self.runner.run(_next(chunks))
            except StopAsyncIteration:
                return

    async def close(self) -> None:
        for chunks in self._streams:
            closing = getattr(chunks, "aclose", None)
            if closing is not None:
                await closing()
        await self.connection.close()


@contextmanager
def streamed_command() -> Iterator[Streamed]:
    with asyncio.Runner() as runner:
        streamed = Streamed(runner, runner.run(command_connection()))
        try:
            yield streamed
        finally:
            runner.run(streamed.close())


async def _next(chunks: AsyncIterator[str]) -> str:
    return await anext(chunks)


async def require_tenant(connection: AsyncConnection[Any], tenant_id: str) -> None:
    """A command about one tenant names an unknown one, rather than answer with nothing: a wrong argument,
    so exit 2, like any usage mistake."""
    try:
        await tenants.get_tenant(connection, tenant_id)
    except NotFound:
        raise CommandError(
            f"no tenant {tenant_id!r}", "`pokna tenants list` shows the tenants", exit_code=EXIT_USAGE
        ) from None
