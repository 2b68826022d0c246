"""`pokna webhooks deliver`: fan out the outbox and send what is due, for as long as it runs.

Each step is its own short transaction (fan out a batch; claim one delivery; record its attempt), and the
HTTP attempt runs outside any, so a slow receiver holds no lock. Any number of workers can run against one
PostgreSQL; on SQLite they take turns at the write lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import unit_of_work
from pokna.db.types import utc_now
from pokna.webhooks import repository
from pokna.webhooks.addresses import Resolver
from pokna.webhooks.attempts import claim_next, record_result
from pokna.webhooks.dispatch import dispatch_events
from pokna.webhooks.pinning import PinnedClient, new_client
from pokna.webhooks.policy import DeliveryPolicy
from pokna.webhooks.schemas import DeliveryStatus
from pokna.webhooks.sending import send


@dataclass
class WorkerReport:
    events_dispatched: int = 0
    attempts: int = 0
    delivered: int = 0
    retries_scheduled: int = 0
    failed: int = 0


def run_worker(
    sessions: sessionmaker[Session],
    seed_key: bytes,
    policy: DeliveryPolicy,
    *,
    poll_seconds: float = 1.0,
    drain: bool = False,
    should_stop: Callable[[], bool] = lambda: False,
    resolve: Resolver | None = None,
) -> WorkerReport:
    """Work until `should_stop()` says so, or, with `drain`, until nothing is left to fan out or send
    (failed deliveries aside). `resolve` answers what a receiver's host resolves to (the system's
    resolver unless a test gives its own)."""
    report = WorkerReport()
    client = new_client()
    try:
        while not should_stop():
            with unit_of_work(sessions) as session:
                report.events_dispatched += dispatch_events(session, policy, utc_now())
            if deliver_one(sessions, seed_key, policy, client, report, resolve):
                continue
            if drain:
                with unit_of_work(sessions) as session:
                    if repository.outstanding(session) == 0:
                        break
            time.sleep(poll_seconds)
    finally:
        client.close()
    return report


def deliver_one(
    sessions: sessionmaker[Session],
    seed_key: bytes,
    policy: DeliveryPolicy,
    client: PinnedClient,
    report: WorkerReport,
    resolve: Resolver | None = None,
) -> bool:
    """Claim, send and record one due delivery; False if none was due."""
    with unit_of_work(sessions) as session:
        claim = claim_next(session, seed_key, policy, utc_now())
    if claim is None:
        return False
    result = send(client, policy, claim, resolve)
    with unit_of_work(sessions) as session:
        status = record_result(session, policy, utc_now(), claim, result)
    report.attempts += 1
    if status is DeliveryStatus.DELIVERED:
        report.delivered += 1
    elif status is DeliveryStatus.PENDING:
        report.retries_scheduled += 1
    elif status is DeliveryStatus.FAILED:
        report.failed += 1
    return True
