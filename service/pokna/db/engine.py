"""The database's waits (`Waits`, for every connection) and SQLAlchemy's engine, which only Alembic's
commands use (`pokna db`, pokna.db.migrate). No HTTP request, command or background job holds an engine or
a session: every route, every command, the sweep, the webhooks worker, the public log's sequencer and the
monitoring reads are on psycopg's async connections (pokna.db.aio, pokna.cli.command_database)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, create_engine

from pokna.db.backend import require_postgresql
from pokna.db.watchdog import ANSWER_GRACE_SECONDS


@dataclass(frozen=True)
class Waits:
    """The longest a request waits on the database at each step, so none hangs while it is away: then
    the request fails with a connection or timeout error, which the API answers with a 503.

    `connect` to open a connection (per PostgreSQL host of a multi-host URL; the wait for a free one is
    the database gate's, pokna.api.database_gate); `statement` for one statement (statement_timeout, lock
    waits included); `idle_in_transaction` for a PostgreSQL session left idle inside a transaction
    (idle_in_transaction_session_timeout: the server ends it, so a stuck request cannot hold its locks and
    its connection for ever). The API sets them all from its settings; a command (an export,
    an audit of a large ledger) keeps the defaults, with no limit on a PostgreSQL statement."""

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


def make_engine(url: str, **kwargs: Any) -> Engine:
    """For Alembic's commands (`pokna db`, pokna.db.migrate), with a command's waits: no statement timeout,
    so no watchdog, and one connection at a time, so no checkout check (pokna.db.aio checks its own)."""
    require_postgresql(url)
    # A SQLAlchemy error's text carries the statement's parameters: a deposit's amount, reference and
    # metadata, a key's hash, a sealed seed. Errors are logged, so they never carry the values.
    kwargs.setdefault("hide_parameters", True)
    connect_args: dict[str, Any] = {**Waits().libpq_parameters(), **kwargs.pop("connect_args", {})}
    return create_engine(url, connect_args=connect_args, **kwargs)
