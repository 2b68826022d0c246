"""`pokna webhooks deliver`: fan out the outbox and send what is due, for as long as it runs.

Each step is its own short transaction (fan out a batch; claim one delivery; record its attempt), and the
HTTP attempt runs outside any, so a slow receiver holds no lock. Any number of workers can run against one
PostgreSQL.

A database that goes away (stopped, restarting, failing over, out of connections) does not end the worker
once it has reached it (one it never reached is a configuration mistake, reported as the command's error):
it says so in one log line, waits with a doubling back-off (at most `_MOST_BACKOFF_SECONDS`) and goes on,
and says once more when the database is back. An attempt already sent keeps its result while it waits, and
records it once it can: the delivery is not sent again for an outage. Only an error that is not an outage
ends the worker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from pokna.db.aio import AsyncDatabase
from pokna.db.sqlstates import unavailable_reason
from pokna.db.types import utc_now
from pokna.tenants.service import tenant_ids_async
from pokna.webhooks import repository
from pokna.webhooks.addresses import Resolver
from pokna.webhooks.attempts import claim_next, record_result
from pokna.webhooks.dispatch import dispatch_events
from pokna.webhooks.pinning import PinnedClient, new_client
from pokna.webhooks.policy import DeliveryPolicy
from pokna.webhooks.schemas import DeliveryStatus
from pokna.webhooks.sending import send

log = logging.getLogger("pokna.webhooks.worker")

_FIRST_BACKOFF_SECONDS = 0.25
_MOST_BACKOFF_SECONDS = 15.0
Done = TypeVar("Done")


@dataclass
class WorkerReport:
    events_dispatched: int = 0
    attempts: int = 0
    delivered: int = 0
    retries_scheduled: int = 0
    failed: int = 0
    outages: int = 0


@dataclass
class _Outage:
    """The database's absence as the worker sees it: when it began, and the next wait."""

    should_stop: Callable[[], bool]
    report: WorkerReport
    since: float | None = None
    backoff: float = field(default=_FIRST_BACKOFF_SECONDS)
    reached: bool = False  # the database answered once: before that, an outage is a mistake to report

    async def wait(self, reason: str) -> None:
        if self.since is None:
            self.since = time.monotonic()
            self.report.outages += 1
            log.warning(
                "database unavailable (%s): webhooks wait and retry, backing off up to %.0f s",
                reason,
                _MOST_BACKOFF_SECONDS,
            )
        deadline = time.monotonic() + self.backoff
        while time.monotonic() < deadline and not self.should_stop():
            await asyncio.sleep(min(0.05, self.backoff))
        self.backoff = min(self.backoff * 2, _MOST_BACKOFF_SECONDS)

    def over(self) -> None:
        if self.since is not None:
            log.warning("database back after %.1f s: webhooks go on", time.monotonic() - self.since)
            self.since = None
            self.backoff = _FIRST_BACKOFF_SECONDS

    async def retry(self, step: Callable[[], Awaitable[Done]]) -> Done | None:
        """`step` until it is done, waiting out any outage; None if told to stop first."""
        while not self.should_stop():
            try:
                done = await step()
            except Exception as error:
                reason = unavailable_reason(error)
                if reason is None or not self.reached:
                    raise
                await self.wait(reason)
                continue
            self.reached = True
            self.over()
            return done
        return None


async def run_worker(
    database: AsyncDatabase,
    seed_key: bytes,
    policy: DeliveryPolicy,
    *,
    poll_seconds: float = 1.0,
    drain: bool = False,
    should_stop: Callable[[], bool] = lambda: False,
    resolve: Resolver | None = None,
) -> WorkerReport:
    """Work until `should_stop()` says so, or, with `drain`, until nothing is left to fan out or send
    (failed deliveries aside), each step on a connection of `database` (the process's one pool).
    `resolve` answers what a receiver's host resolves to (the system's resolver unless a test gives its
    own)."""
    report = WorkerReport()
    outage = _Outage(should_stop, report)

    async def dispatch() -> int:
        async with database.connection() as connection:
            dispatched = await dispatch_events(connection, policy, utc_now())
        report.events_dispatched += dispatched
        return dispatched

    async def nothing_left() -> bool:
        async with database.connection() as connection, connection.transaction():
            for tenant_id in await tenant_ids_async(connection):
                if await repository.outstanding(connection, tenant_id):
                    return False
            return True

    async def deliver() -> bool:
        return await deliver_one(database, seed_key, policy, client, report, resolve, outage)

    client = new_client()
    try:
        while not should_stop():
            if await outage.retry(dispatch) is None:
                break
            sent = await outage.retry(deliver)
            if sent is None:
                break
            if sent:
                continue
            if drain and await outage.retry(nothing_left):
                break
            await asyncio.sleep(poll_seconds)
    finally:
        await client.close()
    return report


async def deliver_one(
    database: AsyncDatabase,
    seed_key: bytes,
    policy: DeliveryPolicy,
    client: PinnedClient,
    report: WorkerReport,
    resolve: Resolver | None,
    outage: _Outage,
) -> bool:
    """Claim, send and record one due delivery; False if none was due. The result of an attempt sent is
    recorded through any outage (`outage`): should the worker be stopped first, the claim's lease runs out
    and the delivery is sent again later, as after a crash."""
    async with database.connection() as connection:
        tenant_ids = await tenant_ids_async(connection)
        claim = await claim_next(
            connection, seed_key, policy, utc_now(), _rotated(tenant_ids, report.attempts)
        )
    if claim is None:
        return False
    result = await send(client, policy, claim, resolve)

    async def record() -> DeliveryStatus | None:
        async with database.connection() as connection:
            return await record_result(connection, policy, utc_now(), claim, result)

    status = await outage.retry(record)
    report.attempts += 1
    if status is DeliveryStatus.DELIVERED:
        report.delivered += 1
    elif status is DeliveryStatus.PENDING:
        report.retries_scheduled += 1
    elif status is DeliveryStatus.FAILED:
        report.failed += 1
    return True


def _rotated(tenant_ids: list[str], turn: int) -> list[str]:
    """Each attempt starts at the next tenant, so one tenant's backlog never holds back another's."""
    if not tenant_ids:
        return tenant_ids
    start = turn % len(tenant_ids)
    return tenant_ids[start:] + tenant_ids[:start]
