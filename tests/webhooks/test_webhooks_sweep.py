"""`pokna sweep` purges the outbox, on both backends: events whose deliveries are all finished go once older
than the retention, with their deliveries; an event still waiting to be fanned out or delivered stays."""

from __future__ import annotations

import threading
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.types import utc_now
from pokna.dealer.service import Clock
from pokna.runtime import Runtime
from support.lock_waits import wait_for_a_statement_waiting_on_a_lock
from support.sweeping import swept
from support.tenant_api import new_tenant
from support.webhook_receiver import running_receiver
from support.webhook_worker import drain, fan_out, fast_webhook_settings, recorded_events

__all__ = ["fast_webhook_settings"]  # the `settings` fixture of this module: retries in milliseconds

RETENTION = timedelta(days=7)


def test_the_sweep_purges_finished_events_older_than_the_retention_and_keeps_the_rest(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    tenant = new_tenant(client, sessions)
    with running_receiver() as receiver:
        made = tenant.post(
            "/v1/webhooks/endpoints", {"url": receiver.url, "event_types": ["ledger.deposit.posted"]}
        )
        endpoint_id = made.json()["id"]
        tenant.wallet(5)
        drain(runtime)  # the first deposit's event: delivered
    tenant.wallet(6)
    fan_out(runtime)  # the second's: fanned out, its delivery pending
    tenant.wallet(7)  # the third's: not even fanned out
    events = recorded_events(sessions)
    assert len(events) == 3

    now = utc_now()
    soon = swept(runtime, Clock(now, timedelta(minutes=10)), webhook_retention=RETENTION)
    assert soon.webhook_events_purged == 0
    later = Clock(now + RETENTION + timedelta(hours=1), timedelta(minutes=10))
    assert swept(runtime, later, webhook_retention=RETENTION).webhook_events_purged == 1
    assert recorded_events(sessions) == events[1:]
    deliveries = tenant.get(f"/v1/webhooks/endpoints/{endpoint_id}/deliveries").json()["data"]
    assert [(delivery["message_id"], delivery["status"]) for delivery in deliveries] == [
        (events[1]["id"], "pending")
    ]


def test_a_delivery_retried_while_the_sweep_purges_its_event_is_kept(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    """The purge picks events whose deliveries are all finished, then deletes them: a retry by hand that
    commits in between (the delivery pending again, answered 200) once had its delivery deleted all the same,
    never to be sent. The test holds the retry's write uncommitted until the purge waits on it."""
    tenant = new_tenant(client, sessions)
    with running_receiver(fail_first=1000) as receiver:
        made = tenant.post(
            "/v1/webhooks/endpoints", {"url": receiver.url, "event_types": ["ledger.deposit.posted"]}
        )
        path = f"/v1/webhooks/endpoints/{made.json()['id']}/deliveries"
        tenant.wallet(5)
        assert drain(runtime).failed == 1
    [failed] = tenant.get(path).json()["data"]
    events = recorded_events(sessions)

    def retry_while_the_purge_waits() -> None:
        with sessions() as retrying:
            retrying.execute(
                text(
                    "UPDATE webhook_delivery SET status = 'pending', next_attempt_at = now(), "
                    "attempt_limit = attempts + 1 WHERE id = :id"
                ),
                {"id": failed["id"]},
            )
            written.set()
            wait_for_a_statement_waiting_on_a_lock(sessions, "DELETE FROM webhook_delivery")
            retrying.commit()

    written = threading.Event()
    retry = threading.Thread(target=retry_while_the_purge_waits)
    retry.start()
    assert written.wait(timeout=30)
    later = Clock(utc_now() + RETENTION + timedelta(hours=1), timedelta(minutes=10))
    assert swept(runtime, later, webhook_retention=RETENTION).webhook_events_purged == 0
    retry.join(timeout=30)
    assert recorded_events(sessions) == events
    [kept] = tenant.get(path).json()["data"]
    assert (kept["id"], kept["status"]) == (failed["id"], "pending")
