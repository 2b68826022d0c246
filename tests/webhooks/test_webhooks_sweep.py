"""`pokna sweep` purges the outbox, on both backends: events whose deliveries are all finished go once older
than the retention, with their deliveries; an event still waiting to be fanned out or delivered stays."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.types import utc_now
from pokna.dealer.service import Clock
from pokna.runtime import Runtime
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
