"""Fan-out against an endpoint deleted at the same moment: the worker reads the tenant's endpoints, then
writes a delivery for each. An endpoint deleted in between once made that write break the foreign key,
an error that is no outage, so the worker stopped; now the fan-out waits for the deletion and leaves the
endpoint out."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from pokna.runtime import Runtime
from support.lock_waits import wait_for_a_statement_waiting_on_a_lock
from support.tenant_api import new_tenant
from support.webhook_worker import fan_out, fast_webhook_settings

__all__ = ["fast_webhook_settings"]  # the `settings` fixture of this module

# Where the fan-out waits for the deletion: reading the endpoints (it locks them), or, had it read them
# unlocked, writing a delivery for the deleted one (the foreign key's check locks it).
FAN_OUT_WAITS = ("SELECT id, event_types FROM webhook_endpoint", "INSERT INTO webhook_delivery")


def test_an_endpoint_deleted_while_its_events_are_fanned_out_gets_none_and_the_worker_goes_on(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    tenant = new_tenant(client, sessions)
    subscribed = {"url": "http://127.0.0.1:9/hooks", "event_types": ["ledger.deposit.posted"]}
    kept, deleted = (tenant.post("/v1/webhooks/endpoints", subscribed).json()["id"] for _ in range(2))
    tenant.wallet(5)

    def delete_while_fanned_out() -> None:
        """The deletion's transaction (what DELETE /v1/webhooks/endpoints/{id} commits), held open until
        the fan-out waits on it."""
        with sessions() as deleting:
            deleting.execute(text("DELETE FROM webhook_endpoint WHERE id = :id"), {"id": deleted})
            written.set()
            wait_for_a_statement_waiting_on_a_lock(sessions, *FAN_OUT_WAITS)
            deleting.commit()

    written = threading.Event()
    deletion = threading.Thread(target=delete_while_fanned_out)
    deletion.start()
    assert written.wait(timeout=30)
    try:
        assert fan_out(runtime) == 1
    finally:
        deletion.join(timeout=30)
    with sessions() as session:
        endpoints = session.execute(text("SELECT endpoint_id FROM webhook_delivery")).scalars().all()
    assert endpoints == [kept]
