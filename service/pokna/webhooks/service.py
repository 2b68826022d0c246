"""The webhooks' one way in, for the HTTP layer, the CLI, the sweep and the tests.

Endpoints (endpoints.py) and a delivery's retry (deliveries.py), each the work of a keyed transaction on
the driver; what a tenant reads of them (reads.py, async); the worker that fans the outbox out and sends
(worker.py: dispatch.py, attempts.py, sending.py), and the purge of finished events. Events themselves
are recorded by the domains, through pokna.outbox.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from psycopg import AsyncConnection

from pokna.webhooks import repository
from pokna.webhooks.deliveries import retry_delivery
from pokna.webhooks.endpoints import (
    EndpointChange,
    NewEndpoint,
    create_endpoint,
    delete_endpoint,
    rotate_secret,
    update_endpoint,
)
from pokna.webhooks.policy import DeliveryPolicy
from pokna.webhooks.repository import WebhookBacklog, webhook_backlog
from pokna.webhooks.worker import WorkerReport, run_worker

__all__ = [
    "DeliveryPolicy",
    "EndpointChange",
    "NewEndpoint",
    "WebhookBacklog",
    "WorkerReport",
    "create_endpoint",
    "delete_endpoint",
    "purge_finished_events",
    "retry_delivery",
    "rotate_secret",
    "run_worker",
    "update_endpoint",
    "webhook_backlog",
]


async def purge_finished_events(
    connection: AsyncConnection[Any], tenant_id: str, now: datetime, retention: timedelta
) -> int:
    """The tenant's events fanned out longer ago than `retention` whose deliveries are all delivered or
    failed, with those deliveries: what `pokna sweep` clears, a batch at a time (each its own transaction
    on an autocommit connection). How many events went."""
    purged = 0
    while True:
        async with connection.transaction():
            batch = await repository.purge_finished(connection, tenant_id, now - retention)
        purged += batch
        if batch == 0:
            return purged
