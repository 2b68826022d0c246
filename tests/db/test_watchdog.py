"""A server that stops answering cannot hold a statement longer than the client's own bound
(pokna.db.watchdog), on psycopg's pools, while a live server's slow statement is still ended by
the server's own timeout. The server process serving the connection is really stopped (SIGSTOP), as a
frozen host or a partition looks to the client."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg
import pytest
from psycopg.pq import TransactionStatus

from pokna.db.aio import AsyncDatabase
from pokna.db.backend import conninfo_of
from pokna.db.engine import Waits
from pokna.db.watchdog import TICK_SECONDS, StatementWatchdog

WAITS = Waits(connect=2, statement=1)
ANSWER = WAITS.answer or 0.0
BOUND = ANSWER + 2 * TICK_SECONDS + 3  # the limit, the looks around it, and a loaded machine's slack
Done = TypeVar("Done")


def answered_within(seconds: float, statement: Callable[[], object]) -> tuple[float, BaseException | None]:
    """How long `statement` took and what it raised, run aside so that a statement that never ends fails
    the test (once `seconds` have passed) rather than hanging it: the server is resumed on the way out."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            statement()
        except BaseException as error:
            errors.append(error)

    started = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"no answer within {seconds} s: the statement waits for the server"
    return time.monotonic() - started, errors[0] if errors else None


def _on_watched_connection(
    database_url: str, work: Callable[[psycopg.AsyncConnection[Any]], Awaitable[Done]]
) -> Done:
    """`work` on a connection of a pool with WAITS, as the API's (pokna.runtime), opened for it."""
    database = AsyncDatabase.for_conninfo(conninfo_of(database_url), WAITS, size=1, overflow=0)

    async def run() -> Done:
        async with database.opened(), database.connection() as connection:
            return await work(connection)

    return asyncio.run(run())


def test_a_live_servers_slow_statement_is_ended_by_the_server_not_the_client(empty_database_url: str) -> None:
    async def slow(connection: psycopg.AsyncConnection[Any]) -> None:
        await connection.execute("SELECT pg_sleep(10)")

    with pytest.raises(psycopg.errors.QueryCanceled):  # statement_timeout, 57014
        _on_watched_connection(empty_database_url, slow)


def test_a_frozen_server_is_abandoned_on_the_hot_paths_road(
    empty_database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    database = AsyncDatabase.for_conninfo(conninfo_of(empty_database_url), WAITS, size=1, overflow=0)
    frozen: list[int] = []

    async def select_on_a_frozen_server() -> float:
        async with database.opened(), database.connection() as connection:
            row = await (await connection.execute("SELECT pg_backend_pid()")).fetchone()
            assert row is not None
            frozen.append(row[0])
            os.kill(row[0], signal.SIGSTOP)
            started = time.monotonic()
            with pytest.raises(psycopg.OperationalError):
                await connection.execute("SELECT 1")
            return time.monotonic() - started

    waited: list[float] = []
    try:
        with caplog.at_level(logging.WARNING, "pokna.db"):
            _, error = answered_within(BOUND, lambda: waited.append(asyncio.run(select_on_a_frozen_server())))
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
    assert error is None
    assert waited[0] >= ANSWER
    assert any("database unavailable" in record.message for record in caplog.records)


class _Driver:
    """What the watchdog reads of a psycopg connection, over a real socket pair: its status is the test's."""

    def __init__(self, sock: socket.socket) -> None:
        self.closed = False
        self.socket = sock.fileno()
        self.transaction_status = TransactionStatus.IDLE

    @property
    def pgconn(self) -> _Driver:
        return self


@pytest.mark.parametrize(
    ("statuses", "abandoned"),
    [
        ("AAAAA", True),  # one statement unanswered at every look, past the limit
        ("AAAA", False),  # busy for 3 s of a 3.5 s limit: not yet
        ("AAIAAIAAIAAI", False),  # answered between looks: a stream of statements, not a stuck one
        ("IITTTTTTT", False),  # idle inside a transaction is the server's to end, not the watchdog's
        ("AAAIAAAAA", True),  # the count starts again after an answer
    ],
)
def test_only_a_statement_unanswered_at_every_look_past_its_limit_is_abandoned(
    statuses: str, abandoned: bool
) -> None:
    codes = {"A": TransactionStatus.ACTIVE, "I": TransactionStatus.IDLE, "T": TransactionStatus.INTRANS}
    watchdog = StatementWatchdog(tick=3600)  # looked at by hand, one look a second of the test's clock
    ours, server = socket.socketpair()
    with ours, server:
        driver = _Driver(ours)
        watchdog.watch(driver, 3.5)
        for moment, status in enumerate(statuses):
            driver.transaction_status = codes[status]
            watchdog.look(float(moment))
        ours.settimeout(0.5)
        try:
            received = ours.recv(1)  # b"" once shut down; nothing to read (a timeout) while it is not
        except TimeoutError:
            received = None
    assert (received == b"") == abandoned


def test_a_closed_connection_is_forgotten() -> None:
    watchdog = StatementWatchdog(tick=3600)
    ours, server = socket.socketpair()
    with ours, server:
        driver = _Driver(ours)
        watchdog.watch(driver, 1.0)
        driver.transaction_status = TransactionStatus.ACTIVE
        watchdog.look(0.0)
        driver.closed = True
        watchdog.look(5.0)
        ours.settimeout(0.2)
        with pytest.raises(TimeoutError):
            ours.recv(1)  # never shut down: the socket may be another connection's by now


def test_a_stream_of_answered_statements_is_never_abandoned(empty_database_url: str) -> None:
    """Each statement answered in 20 ms, back to back for longer than the limit: every look finds the
    connection busy (the looking thread runs while the owner waits on its socket), but each statement is
    new. Before statements stamped their connection, this cut a healthy connection at the limit."""

    async def stream(connection: psycopg.AsyncConnection[Any]) -> Any:
        deadline = time.monotonic() + ANSWER + 2
        while time.monotonic() < deadline:
            await connection.execute("SELECT pg_sleep(0.02)")
        return await (await connection.execute("SELECT 2")).fetchone()

    assert _on_watched_connection(empty_database_url, stream) == (2,)


def test_a_stream_of_answered_pipelines_is_never_abandoned(empty_database_url: str) -> None:
    database = AsyncDatabase.for_conninfo(conninfo_of(empty_database_url), WAITS, size=1, overflow=0)

    async def pipelines_for(seconds: float) -> int:
        deadline, sent = time.monotonic() + seconds, 0
        async with database.opened(), database.connection() as connection:
            while time.monotonic() < deadline:
                async with connection.pipeline():
                    await connection.execute("SELECT pg_sleep(0.01)")
                    await connection.execute("SELECT pg_sleep(0.01)")
                sent += 2
            await connection.execute("SELECT 1")
        return sent

    assert asyncio.run(pipelines_for(ANSWER + 2)) > 0


def test_an_outage_ends_in_the_log_only_once_the_database_answers(caplog: pytest.LogCaptureFixture) -> None:
    """While the server stays frozen, abandoning the one statement that waited leaves none waiting: that
    is not an answer. Before, the next look logged `database answering again` with the server still
    frozen, and each later request of the same outage logged its abandoned connection all over again."""
    watchdog = StatementWatchdog(tick=3600)  # looked at by hand, one look a second of the test's clock
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        first, second, third = (_Driver(ours) for ours, _ in pairs)
        with caplog.at_level(logging.WARNING, "pokna.db"):
            for driver in (first, second, third):
                watchdog.watch(driver, 2.0)
            first.transaction_status = TransactionStatus.ACTIVE
            for moment in range(4):  # abandoned at 2; at 3 nothing waits any more
                watchdog.look(float(moment))
            second.transaction_status = TransactionStatus.ACTIVE  # the next request, still frozen
            for moment in range(4, 8):
                watchdog.look(float(moment))
            while_frozen = [record.message for record in caplog.records]
            watchdog.sending(third)  # the server is back: a statement sent and answered between two looks
            watchdog.look(8.0)
    finally:
        for ours, server in pairs:
            ours.close()
            server.close()
    assert not [line for line in while_frozen if "answering again" in line], while_frozen
    assert sum("was abandoned" in line for line in while_frozen) == 1, while_frozen
    assert caplog.records[-1].message == "database answering again: 2 connections were abandoned"
