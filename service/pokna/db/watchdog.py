"""The client's own bound on a statement: a connection whose statement has had no answer for longer than its
limit is abandoned, whether or not the server is there to enforce anything.

Why: `statement_timeout` is the server's. A PostgreSQL that stops answering (frozen, a host that lost
power, a network partition) enforces nothing, and until TCP gives up (about 15 minutes on Linux) a request
waiting on it would wait too, holding its place at the database gate, as would `/readyz` (issue 46, M1).
libpq's keepalives and `tcp_user_timeout` (pokna.db.engine, `Waits.libpq_parameters`) find a peer that
vanished from the network, but not a server process that is stopped while its host's kernel still
acknowledges every packet. So one thread per process looks at every watched connection twice a second.

What it measures is the age of the statement in flight, not how long a connection has looked busy: every
statement stamps its connection as it is sent (the cursors below, installed on every watched connection;
a pipeline's statements as they are queued), and a look that finds the connection not busy (libpq's
transaction status anything but ACTIVE) clears the stamp. A connection busy at a look with no stamp (a
COMMIT, a server-side cursor's FETCH: sent by psycopg itself) is stamped then. Sampling alone cannot tell
one unanswered statement from a stream of answered ones: the looking thread runs when the owner waits on
its socket, so a busy connection is seen busy at nearly every look (the review of issue 46's fix cut
healthy connections that way under load). A connection whose statement has waited longer than its limit
has its socket shut down. The thread waiting on it (or the event loop) then sees the connection closed,
the statement fails with an `OperationalError`, and the request is answered 503 `database_unavailable`
like any lost connection. A COMMIT cut that way may have committed before the server froze: a request
with an Idempotency-Key is replayed, not applied twice, when retried.

The limit is the statement timeout plus `ANSWER_GRACE_SECONDS`, the time a live server takes to deliver
its own cancellation: a slow statement on a live server is still ended by the server, never here.
Connections without a statement timeout (the commands: an export may run long) are not watched.

The first connection of an outage found waiting `WARN_AFTER_SECONDS` is logged (`database unavailable`),
so an operator sees a frozen database while it lasts, not only after it resumes. The outage ends (`database
answering again`) at the first look that finds a statement answered and none stuck: a look that finds
none waiting because the only one was just abandoned proves nothing, the server may still be frozen.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

ANSWER_GRACE_SECONDS = 2.0
"""Beyond the statement timeout: the server's own cancellation arrives well within it when it is alive."""

WARN_AFTER_SECONDS = 5.0
"""A statement waiting this long (a lock wait, or a server that stopped answering) is logged, once an outage."""

TICK_SECONDS = 0.5

log = logging.getLogger("pokna.db")


@dataclass
class _Watched:
    connection: weakref.ref[Any]  # a psycopg Connection or AsyncConnection, not kept alive by the watch
    limit: float
    inode: int
    sent_at: float | None = None


class StatementWatchdog:
    def __init__(self, tick: float = TICK_SECONDS) -> None:
        self._tick = tick
        self._lock = threading.Lock()
        self._watched: dict[int, _Watched] = {}
        self._pid: int | None = None
        self._warned = False
        self._abandoned = 0
        os.register_at_fork(after_in_child=self._forget_the_parent)

    def _forget_the_parent(self) -> None:
        """A forked child has none of its parent's threads, and may have been forked while one of them
        held the lock: a new lock, no connections, and the next watch starts a thread of the child's."""
        self._lock = threading.Lock()
        self._watched = {}
        self._pid = None

    def watch(self, connection: Any, limit: float) -> None:
        """From now until it closes, `connection` (psycopg, sync or async) is abandoned when a statement
        of its goes unanswered for `limit` seconds."""
        try:
            inode = os.fstat(connection.pgconn.socket).st_ino
        except Exception:  # closed already, or no socket: nothing to watch
            return
        with self._lock:
            if self._pid != os.getpid():  # first use in this process
                self._watched.clear()
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="pokna-statement-watchdog", daemon=True).start()
            self._watched[id(connection)] = _Watched(weakref.ref(connection), limit, inode)

    def sending(self, connection: Any) -> None:
        """A statement of `connection`'s is on its way: its answer is waited for from now."""
        entry = self._watched.get(id(connection))
        if entry is not None and entry.connection() is connection:
            entry.sent_at = time.monotonic()

    def _run(self) -> None:
        while True:
            time.sleep(self._tick)
            try:
                self.look(time.monotonic())
            except Exception:  # never let the watchdog die: log it and look again
                log.exception("the statement watchdog failed a look")

    def look(self, now: float) -> None:
        """One look at every watched connection (the thread's tick; tests call it with their own clock)."""
        with self._lock:
            watched = list(self._watched.items())
        stuck = answered = False
        for key, entry in watched:
            connection = entry.connection()
            status = None if connection is None else _status(connection)
            if connection is None or status is None:
                with self._lock:
                    self._watched.pop(key, None)
                continue
            if status != TransactionStatus.ACTIVE:
                answered = answered or entry.sent_at is not None
                entry.sent_at = None  # answered: nothing is waited for
                continue
            if entry.sent_at is None:  # busy with what psycopg sent itself (COMMIT, FETCH): from now
                entry.sent_at = now
                continue
            waited = now - entry.sent_at
            if waited >= min(WARN_AFTER_SECONDS, entry.limit):
                stuck = True
                if not self._warned:
                    self._warned = True
                    log.warning(
                        "database unavailable: a statement has had no answer from PostgreSQL for %.0f s "
                        "(a lock wait, or the server stopped answering); it is abandoned at %.0f s",
                        waited,
                        entry.limit,
                    )
            if waited >= entry.limit and _shut_down(connection, entry.inode):
                self._abandoned += 1
                if self._abandoned == 1:
                    log.warning(
                        "database unavailable: no answer from PostgreSQL to a statement for %.0f s; its "
                        "connection was abandoned and its request answered 503",
                        waited,
                    )
                with self._lock:
                    self._watched.pop(key, None)
        if answered and not stuck and self._warned:
            if self._abandoned:
                log.warning("database answering again: %d connections were abandoned", self._abandoned)
            self._warned, self._abandoned = False, 0


def _status(connection: Any) -> TransactionStatus | None:
    """None once the connection is closed (it is then forgotten)."""
    try:
        if connection.closed:
            return None
        return TransactionStatus(connection.pgconn.transaction_status)
    except Exception:
        return None


def _shut_down(connection: Any, inode: int) -> bool:
    """Shut the connection's socket down, so whoever waits on it wakes to a closed connection. The socket
    is checked to be the one watched (its inode) before anything is done with it: the owner may have
    closed it since the look, and its descriptor's number may already belong to something else."""
    try:
        duplicate = os.dup(connection.pgconn.socket)
    except Exception:
        return False
    try:
        if os.fstat(duplicate).st_ino != inode:
            return False
        with socket.socket(fileno=duplicate) as sock:
            duplicate = -1  # the socket object closes it
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        return False
    finally:
        if duplicate >= 0:
            os.close(duplicate)
    return True


class StampingAsyncCursor(psycopg.AsyncCursor[Any]):
    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        WATCHDOG.sending(self.connection)
        return await super().execute(*args, **kwargs)

    async def executemany(self, *args: Any, **kwargs: Any) -> None:
        WATCHDOG.sending(self.connection)
        await super().executemany(*args, **kwargs)


def watch_async(connection: psycopg.AsyncConnection[Any], limit: float) -> None:
    """A connection of the hot paths' pool: its statements stamped, then watched."""
    connection.cursor_factory = StampingAsyncCursor
    WATCHDOG.watch(connection, limit)


WATCHDOG = StatementWatchdog()
"""The process's one watchdog: every pool with a statement timeout registers its connections."""
