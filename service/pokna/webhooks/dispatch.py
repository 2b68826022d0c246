"""Fan-out: each event of the outbox becomes one delivery per enabled endpoint of its tenant that wants
its type, at the time the worker picks the event up (not when the event is recorded), so a business
transaction only ever inserts one row and never reads the endpoints.

An endpoint made after an event was fanned out does not receive it; one disabled at that time does not
either. Any number of workers may fan out at once: each locks the events it takes and skips the others'.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection

from pokna.db.types import new_id
from pokna.tenants.service import tenant_ids_async
from pokna.webhooks import repository
from pokna.webhooks.policy import DeliveryPolicy

BATCH = 200


async def dispatch_events(
    connection: AsyncConnection[Any],
    policy: DeliveryPolicy,
    now: datetime,
    batch: int = BATCH,
    tenant_ids: Sequence[str] | None = None,
) -> int:
    """Fan out up to `batch` events, tenant by tenant (every tenant unless `tenant_ids` names them), each
    tenant's oldest first, in one transaction; how many were taken."""
    taken = 0
    async with connection.transaction():
        for tenant_id in await tenant_ids_async(connection) if tenant_ids is None else tenant_ids:
            if taken >= batch:
                break
            taken += await _dispatch_tenant(connection, policy, now, tenant_id, batch - taken)
    return taken


async def _dispatch_tenant(
    connection: AsyncConnection[Any], policy: DeliveryPolicy, now: datetime, tenant_id: str, batch: int
) -> int:
    events = await repository.undispatched_events(connection, tenant_id, batch)
    if not events:
        return 0
    endpoints = await repository.enabled_endpoints(connection, tenant_id)
    deliveries = [
        {
            "id": new_id("whdl"),
            "event_seq": seq,
            "endpoint_id": endpoint_id,
            "ordering_key": ordering_key,
            "attempt_limit": policy.attempt_limit,
        }
        for seq, event_type, ordering_key in events
        for endpoint_id, wanted in endpoints
        if event_type in wanted
    ]
    await repository.add_deliveries(connection, tenant_id, now, [event[0] for event in events], deliveries)
    return len(events)
