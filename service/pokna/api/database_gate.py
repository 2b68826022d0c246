"""The queue in front of the connection pool: a request waits here, in the event loop, for one of as many
places as the pool has connections, before its first database use.

Why (issue 28, F2): routes are plain `def`s, run on anyio's pool of 40 threads, and the pool's checkout
blocks its thread. A burst of more requests than the pool has connections filled the threads with
checkouts waiting for a connection, while the requests that held the connections waited for a thread to
finish on: nothing moved until the checkouts timed out (503 after `POKNA_DATABASE_POOL_TIMEOUT_SECONDS`),
and every other tenant's request on that worker waited behind them. Waiting here holds no thread, and a
request that gets a place always finds a connection free, so a burst queues instead of failing.

The places go round robin between parties (a bearer key's digest, else the client's address), one
request of each waiting party in turn, so one tenant's burst cannot push another tenant's request behind
all of its own; and no party holds more than half of them, so another tenant's request finds a place free
at once however long one tenant's requests take (a stream of exports, lock waits): they could otherwise
hold every place for as long as they run (docs/operations.md, "Rate limits"). A tenant alone loses little
by it: a worker's requests share one interpreter, so its burst runs about as fast 7 at a time as 15.

The wait is bounded like the pool's own (`POKNA_DATABASE_POOL_TIMEOUT_SECONDS`): past it the request is a
503 `database_unavailable`. `/metrics` shows the gate's places, the requests waiting and each wait
(docs/metrics.md), what the queue alert of deploy/prometheus/ watches.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, deque

from pokna import metrics
from pokna.errors import DatabaseUnavailable
from pokna.settings import Settings

log = logging.getLogger("pokna.api")


class DatabaseGate:
    """Used from the event loop only, so no lock is needed."""

    def __init__(self, places: int, wait_seconds: float) -> None:
        self.places = places
        self.per_party = max(1, places // 2)
        self.wait_seconds = wait_seconds
        self._free = places
        self._held: dict[bytes, int] = {}
        self._waiting: OrderedDict[bytes, deque[asyncio.Future[None]]] = OrderedDict()
        metrics.db_gate_places(places)

    @classmethod
    def for_settings(cls, settings: Settings) -> DatabaseGate:
        """As many places as the requests' pool (pokna.runtime) can hand out connections, its size and its
        overflow: a request uses one at a time."""
        places = settings.database_pool_size + settings.database_pool_overflow
        return cls(places, settings.database_pool_timeout_seconds)

    async def enter(self, party: bytes) -> None:
        """Takes a place, waiting for one in the party's turn; `leave` gives it back."""
        # A place is free only while everyone waiting holds their share already (`leave` sees to it).
        if self._free > 0 and party not in self._waiting and self._held.get(party, 0) < self.per_party:
            self._free -= 1
            self._held[party] = self._held.get(party, 0) + 1
            metrics.db_gate_waited(0.0, timed_out=False)
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(party, deque()).append(turn)
        started = time.perf_counter()
        metrics.db_gate_waiting(+1)
        try:
            async with asyncio.timeout(self.wait_seconds):
                await turn
        except BaseException as error:
            metrics.db_gate_waiting(-1)
            if turn.done() and not turn.cancelled():
                self.leave(party)  # handed a place just as it gave up: the next in turn has it
            else:
                turn.cancel()
                self._forget(party, turn)
            if isinstance(error, TimeoutError):
                metrics.db_gate_waited(time.perf_counter() - started, timed_out=True)
                refused = DatabaseUnavailable(
                    f"no database connection came free within {self.wait_seconds:g} s "
                    "(every one is in use); nothing was committed"
                )
                self._log_timeout(refused)
                raise refused from None
            raise
        metrics.db_gate_waiting(-1)
        metrics.db_gate_waited(time.perf_counter() - started, timed_out=False)

    def _log_timeout(self, refused: DatabaseUnavailable) -> None:
        """The line the runbook sends the operator to (docs/operations.md, PoknaServiceUnavailable), as
        `pokna.api.problems` writes it for a database that refused: the places are held by requests that
        are slow to finish (a slow or frozen database, lock waits, the beacon's relays)."""
        waiting = sum(len(queue) for queue in self._waiting.values())
        log.warning(
            "database unavailable: %s (database gate: its %d place%s held by requests still running, "
            "%d more waiting)",
            refused.detail,
            self.places,
            "" if self.places == 1 else "s",
            waiting,
        )

    def leave(self, party: bytes) -> None:
        """Gives the party's place to the next waiting party in turn that holds less than its share (that
        party then goes to the back), or frees it."""
        held = self._held[party] - 1
        if held:
            self._held[party] = held
        else:
            del self._held[party]
        for waiting in list(self._waiting):
            if self._held.get(waiting, 0) >= self.per_party:
                continue
            queue = self._waiting[waiting]
            turn = queue.popleft()
            if queue:
                self._waiting.move_to_end(waiting)
            else:
                del self._waiting[waiting]
            self._held[waiting] = self._held.get(waiting, 0) + 1
            turn.set_result(None)
            return
        self._free += 1

    def _forget(self, party: bytes, turn: asyncio.Future[None]) -> None:
        queue = self._waiting.get(party)
        if queue is None:
            return
        if turn in queue:
            queue.remove(turn)
        if not queue:
            del self._waiting[party]


class Place:
    """One request's hold on the gate: taken before its first database use, given back once it holds no
    connection; idempotent, so every way out of a request can give it back."""

    def __init__(self, gate: DatabaseGate | None, party: bytes) -> None:
        self.gate = gate
        self.party = party
        self.held = False

    async def take(self) -> None:
        if self.gate is not None and not self.held:
            await self.gate.enter(self.party)
            self.held = True

    def give_back(self) -> None:
        if self.gate is not None and self.held:
            self.held = False
            self.gate.leave(self.party)
