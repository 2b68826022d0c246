"""Fan-out: each event of the outbox becomes one delivery per enabled endpoint of its tenant that wants
its type, at the time the worker picks the event up (not when the event is recorded), so a business
transaction only ever inserts one row and never reads the endpoints.

An endpoint made after an event was fanned out does not receive it; one disabled at that time does not
either. Any number of workers may fan out at once: each locks the events it takes and skips the others'.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.orm import Session

from pokna.db.models.webhook import WebhookDelivery
from pokna.db.types import new_id
from pokna.tenants import service as tenants
from pokna.webhooks import repository
from pokna.webhooks.policy import DeliveryPolicy

BATCH = 200


def dispatch_events(
    session: Session,
    policy: DeliveryPolicy,
    now: datetime,
    batch: int = BATCH,
    tenant_ids: Sequence[str] | None = None,
) -> int:
    """Fan out up to `batch` events, tenant by tenant (every tenant unless `tenant_ids` names them), each
    tenant's oldest first; how many were taken."""
    taken = 0
    for tenant_id in tenants.tenant_ids(session) if tenant_ids is None else tenant_ids:
        if taken >= batch:
            break
        taken += _dispatch_tenant(session, policy, now, tenant_id, batch - taken)
    return taken


def _dispatch_tenant(
    session: Session, policy: DeliveryPolicy, now: datetime, tenant_id: str, batch: int
) -> int:
    events = repository.undispatched_events(session, tenant_id, batch)
    if not events:
        return 0
    endpoints = [
        (endpoint.id, set(endpoint.event_types))
        for endpoint in repository.enabled_endpoints(session, tenant_id)
    ]
    for event in events:
        for endpoint_id, wanted in endpoints:
            if event.type in wanted:
                session.add(
                    WebhookDelivery(
                        id=new_id("whdl"),
                        event_seq=event.seq,
                        endpoint_id=endpoint_id,
                        tenant_id=event.tenant_id,
                        ordering_key=event.ordering_key,
                        status="pending",
                        attempts=0,
                        attempt_limit=policy.attempt_limit,
                        next_attempt_at=now,
                        created_at=now,
                    )
                )
        event.dispatched_at = now
    session.flush()
    return len(events)
