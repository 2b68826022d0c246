"""The backlog gauges of `/metrics`: work the database holds that the sweeper, the webhooks worker or the
beacon should already have done, and how long the oldest has waited.

Counters cannot show these: the work is done (or not) by other processes (`pokna sweep`, `pokna webhooks
deliver`), and a process that stopped counts nothing. So they are read from the database itself when
`/metrics` is rendered, at most once per `BACKLOG_REUSE_SECONDS` per process, by a reader the app's
assembly hands in (pokna.backlog asks each domain; this kernel knows none). Every API process reads the
same database, so every one reports the same values: aggregate them with `max`, never `sum`
(deploy/prometheus/). A read that fails or is late leaves the other gauges out, never stale: `pokna_backlog_up` 0.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from pokna.db.sqlstates import unavailable_reason
from pokna.metrics.backlog import Backlog, Late
from pokna_verify.invariant import present

BACKLOG_REUSE_SECONDS = 10.0
"""A read is reported again for this long: Prometheus scrapes every 15 s or so, and several scrapers (or
a flood of scrapes) then cost the database one read per process every 10 s."""

SCRAPE_WAIT_SECONDS = 3.0
"""The longest a scrape waits for a read under way: well within Prometheus's scrape timeout (10 s)."""

log = logging.getLogger("pokna.api")


class BacklogGauges:
    """A prometheus-client collector over the latest read; `refresh()` brings it up to date for a scrape,
    `exposition()` renders it.

    A read runs aside, as a task of the event loop on the monitoring pool (no thread), and a scrape waits
    for it at most SCRAPE_WAIT_SECONDS: a database that stops answering costs a scrape its backlog gauges
    (`pokna_backlog_up` 0), never the scrape (issue 46, M1). One read at a time; a read still running when
    the next scrape comes is waited for again, not doubled. A failing read is logged once when the reads
    start failing and once when they succeed again, not at every scrape of an outage."""

    def __init__(self, read: Callable[[], Awaitable[Backlog]]) -> None:
        self._read = read
        self._latest: tuple[float, Backlog | None, float] | None = None
        self._reading: asyncio.Task[None] | None = None
        self._shown: tuple[Backlog | None, float] = (None, 0.0)
        self._failing = False
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(self)

    def exposition(self) -> bytes:
        return generate_latest(self._registry)

    async def refresh(self) -> None:
        """What the next rendering shows: the latest read, read afresh when older than
        BACKLOG_REUSE_SECONDS, or nothing if that read has not ended within SCRAPE_WAIT_SECONDS."""
        loop = asyncio.get_running_loop()
        reading = self._reading
        if reading is not None and reading.get_loop() is not loop:  # a loop that ended (a test client's)
            reading = self._reading = None
        latest = self._latest
        if reading is None and (latest is None or time.monotonic() - latest[0] >= BACKLOG_REUSE_SECONDS):
            reading = self._reading = loop.create_task(self._read_aside())
        if reading is not None:
            started = time.perf_counter()
            done, _ = await asyncio.wait({reading}, timeout=SCRAPE_WAIT_SECONDS)
            if not done:  # the database is slow or not answering: this scrape goes without
                self._shown = (None, time.perf_counter() - started)
                return
        latest = present(self._latest, "a reading taken before it is shown")
        self._shown = latest[1], latest[2]

    async def _read_aside(self) -> None:
        started = time.perf_counter()
        backlog: Backlog | None = None
        try:
            backlog = await self._read()
        except Exception as error:
            self._failed(error)
        else:
            self._recovered()
        finally:  # whatever ended the read, the next scrape may start another
            self._latest = (time.monotonic(), backlog, time.perf_counter() - started)
            if self._reading is asyncio.current_task():
                self._reading = None

    def _failed(self, error: Exception) -> None:
        """One line when the reads start failing, none while they go on failing: in an outage each worker
        read (and logged the whole traceback of) the same refusal every `BACKLOG_REUSE_SECONDS` (issue 46,
        L6). An outage is `pokna.db.sqlstates`' sentence, never the error's text (the statement); anything
        else is a bug, and keeps its traceback."""
        if self._failing:
            return
        self._failing = True
        reason = unavailable_reason(error)
        log.warning(
            "the backlog gauges of /metrics cannot be read: %s (%s); said once until they can again",
            reason or "an unexpected error",
            type(error).__name__,
            exc_info=True if reason is None else None,
        )

    def _recovered(self) -> None:
        if self._failing:
            self._failing = False
            log.info("the backlog gauges of /metrics are read again")

    def collect(self) -> Iterator[Metric]:
        backlog, seconds = self._shown
        yield GaugeMetricFamily(
            "pokna_backlog_up",
            "1 if the backlog gauges were read from the database, else 0.",
            0 if backlog is None else 1,
        )
        yield GaugeMetricFamily(
            "pokna_backlog_read_duration_seconds", "Time the last read of the backlog gauges took.", seconds
        )
        if backlog is None:
            return
        yield from _late(
            "pokna_game_deadlines_overdue",
            "pokna_game_deadline_overdue_seconds",
            "Games whose turn or start deadline passed and whose default action is not applied yet",
            backlog.game_deadlines,
        )
        yield from _late(
            "pokna_beacon_rolls_overdue",
            "pokna_beacon_roll_overdue_seconds",
            "Accepted beacon-mode rolls still waiting past their deadline (the round's due time plus 5 s)",
            backlog.beacon_rolls,
        )
        yield GaugeMetricFamily(
            "pokna_wallets_held_by_overdue_rolls",
            "Seated wallets held by beacon-mode rolls waiting past their deadline (no money may leave them).",
            backlog.wallets_held_by_overdue_rolls,
        )
        waiting = GaugeMetricFamily(
            "pokna_webhook_backlog",
            "Webhook work waiting for the worker: events to fan out, deliveries due now.",
            labels=["stage"],
        )
        oldest = GaugeMetricFamily(
            "pokna_webhook_backlog_oldest_seconds",
            "How long the oldest waiting webhook work has waited (since it occurred, or became due).",
            labels=["stage"],
        )
        for stage, late in (("fan_out", backlog.webhook_fan_out), ("delivery", backlog.webhook_delivery)):
            waiting.add_metric([stage], late.count)
            oldest.add_metric([stage], late.oldest_seconds)
        yield waiting
        yield oldest
        yield GaugeMetricFamily(
            "pokna_ledger_unsigned_seconds",
            "Age of the oldest journal transaction that no signed checkpoint covers yet (0 when all are).",
            backlog.ledger_unsigned_seconds,
        )


def _late(count_name: str, seconds_name: str, what: str, late: Late) -> Iterator[Metric]:
    yield GaugeMetricFamily(count_name, f"{what}.", late.count)
    yield GaugeMetricFamily(seconds_name, f"{what}: how long past it the oldest is.", late.oldest_seconds)
