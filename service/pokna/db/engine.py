"""The database's waits (`Waits`, for every connection) and SQLAlchemy's engine, which only Alembic's
commands use (`pokna db`, pokna.db.migrate). No HTTP request, command or background job holds an engine or
a session: every route, every command, the sweep, the webhooks worker, the public log's sequencer and the
monitoring reads are on psycopg's async connections (pokna.db.aio, pokna.cli.command_database)."""

from __future__ import annotations

import select
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, create_engine, event, exc

from pokna.db.backend import require_postgresql
from pokna.db.watchdog import ANSWER_GRACE_SECONDS, watch


@dataclass(frozen=True)
class Waits:
    """The longest a request waits on the database at each step, so none hangs while it is away: then
    the request fails with a connection or timeout error, which the API answers with a 503.

    `pool` for a free pooled connection; `connect` to open one (per PostgreSQL host of a multi-host
    URL); `statement` for one statement (statement_timeout, lock waits included); `idle_in_transaction` for a PostgreSQL session left idle inside
    a transaction (idle_in_transaction_session_timeout: the server ends it, so a stuck request cannot hold
    its locks and its connection for ever). The API sets them all from its settings; a command (an export,
    an audit of a large ledger) keeps the defaults, with no limit on a PostgreSQL statement."""

    pool: float = 10
    connect: int = 5
    statement: int | None = None
    idle_in_transaction: int | None = None

    @property
    def answer(self) -> float | None:
        """The client's own bound on a statement (pokna.db.watchdog): the server's timeout and a grace, so
        a server that stops answering cannot hold a request longer than one that answers."""
        return None if self.statement is None else self.statement + ANSWER_GRACE_SECONDS

    def libpq_parameters(self) -> dict[str, str | int]:
        """Every connection's options, for SQLAlchemy's engine and psycopg's pool alike (the one place).

        The server's timeouts as `options`; `connect_timeout` per host; TCP keepalives, so a pooled
        connection whose peer vanished (power lost, a partition) is found within about a minute while
        idle; and `tcp_user_timeout`, so one that vanished while a statement was on its way fails once
        that statement's bytes go unacknowledged for as long as a statement may run. (A server that is
        stopped while its host still acknowledges is the watchdog's.) libpq ignores the TCP options on a
        Unix socket."""
        parameters: dict[str, str | int] = {
            "connect_timeout": self.connect,
            "keepalives": 1,
            "keepalives_idle": KEEPALIVE_IDLE_SECONDS,
            "keepalives_interval": KEEPALIVE_INTERVAL_SECONDS,
            "keepalives_count": KEEPALIVE_COUNT,
        }
        if self.answer is not None:
            parameters["tcp_user_timeout"] = int(self.answer * 1000)
        options = [
            f"-c {name}={seconds * 1000}"
            for name, seconds in (
                ("statement_timeout", self.statement),
                ("idle_in_transaction_session_timeout", self.idle_in_transaction),
            )
            if seconds is not None
        ]
        if options:
            parameters["options"] = " ".join(options)
        return parameters


KEEPALIVE_IDLE_SECONDS = 30
KEEPALIVE_INTERVAL_SECONDS = 10
KEEPALIVE_COUNT = 3


def make_engine(url: str, waits: Waits | None = None, **kwargs: Any) -> Engine:
    require_postgresql(url)
    waits = waits or Waits()
    # A SQLAlchemy error's text carries the statement's parameters: a deposit's amount, reference and
    # metadata, a key's hash, a sealed seed. Errors are logged, so they never carry the values.
    kwargs.setdefault("hide_parameters", True)
    kwargs.setdefault("pool_timeout", waits.pool)
    connect_args: dict[str, Any] = {**waits.libpq_parameters(), **kwargs.pop("connect_args", {})}
    if not hasattr(select, "poll"):  # no poll(2) on this platform: ping each checkout instead
        kwargs.setdefault("pool_pre_ping", True)
    engine = create_engine(url, connect_args=connect_args, **kwargs)
    if not kwargs.get("pool_pre_ping"):
        event.listen(engine, "checkout", _drop_if_the_server_hung_up)
    if (answer := waits.answer) is not None:
        event.listen(engine, "connect", lambda connection, _record: watch(connection, answer))
    return engine


def _drop_if_the_server_hung_up(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """A pooled connection may have died with the server (restart, crash, failover): one the server
    closed is replaced at checkout, so the service recovers by itself once the database is back, and
    every other connection the pool holds is replaced too (they died with it), so the next ones connect
    afresh, through every host of a multi-host URL in turn.

    Checked without a round trip, instead of `pool_pre_ping`'s `SELECT 1` on every checkout: a server
    that stops, crashes or is killed closes its sockets (the kernel does, for a killed process), and an
    idle connection in the pool has nothing to read unless the server said goodbye (a FATAL notice, then
    the end of the stream). So anything readable, or a hang-up, means it is gone. What this cannot see, a
    peer that vanished without a word (a cut cable), a ping could not see either: it would block until
    TCP gave up. A connection that dies after checkout fails its statement (a command's error)."""
    if dbapi_connection.closed:
        raise exc.InvalidatePoolError("the connection was closed")
    poller = select.poll()
    poller.register(dbapi_connection.fileno(), select.POLLIN | select.POLLPRI)
    if poller.poll(0):
        raise exc.InvalidatePoolError("the database server closed the connection")
