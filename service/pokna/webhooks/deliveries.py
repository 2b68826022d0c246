"""A delivery's retry asked for by hand (what a tenant reads of its deliveries is pokna.webhooks.reads): the
work of one keyed transaction on the driver, as an endpoint's writes are (pokna.webhooks.endpoints)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from pokna.idempotency.keyed import Transaction
from pokna.webhooks import reads
from pokna.webhooks.errors import DeliveryInFlight, DeliveryNotFound
from pokna.webhooks.schemas import DeliveryStatus, WebhookDeliveryOut

DELIVERY_LOCKED = (
    f"SELECT event.id, event.type, delivery.locked_until, {reads.DELIVERY_COLUMNS} "  # noqa: S608
    "FROM webhook_delivery AS delivery JOIN webhook_event AS event "
    "ON event.tenant_id = delivery.tenant_id AND event.seq = delivery.event_seq "
    "WHERE delivery.tenant_id = %(tenant_id)s AND delivery.id = %(delivery_id)s "
    "AND delivery.endpoint_id = %(endpoint_id)s FOR UPDATE OF delivery"
)
_RETRY = (
    "UPDATE webhook_delivery SET status = 'pending', next_attempt_at = %(now)s, "
    "attempt_limit = %(attempt_limit)s, locked_until = NULL, claim_token = NULL "
    "WHERE tenant_id = %(tenant_id)s AND id = %(delivery_id)s"
)


async def retry_delivery(
    opened: Transaction, now: datetime, endpoint_id: str, delivery_id: str
) -> WebhookDeliveryOut:
    """One more attempt, due now, whatever the delivery's state (a delivered one is sent again with the
    same `webhook-id`); if it fails, a delivered or failed delivery is failed again, and one still on its
    schedule (pending, or its worker's lease over) keeps the retries it had left. Refused while an attempt
    is in flight."""
    values = {"endpoint_id": endpoint_id, "delivery_id": delivery_id}

    async def queue(tenant_id: str) -> tuple[Any, Any]:
        connection, bound = opened.connection, {**values, "tenant_id": tenant_id}
        endpoint = await connection.execute(reads.ENDPOINT, bound)
        return endpoint, await connection.execute(DELIVERY_LOCKED, bound)

    endpoint, delivery = await opened.read(queue)
    reads.endpoint_found(endpoint_id, await endpoint.fetchone())
    row = await delivery.fetchone()
    if row is None:
        raise DeliveryNotFound(f"no delivery {delivery_id} of webhook endpoint {endpoint_id}")
    message_id, event_type, locked_until = row[:3]
    found = reads.as_record(reads.DeliveryRecord, row[3:])
    if found.status == DeliveryStatus.SENDING and locked_until is not None and locked_until > now:
        raise DeliveryInFlight(f"delivery {delivery_id} is being attempted; ask again once it is done")
    attempt_limit = found.attempts + 1
    if found.status in (DeliveryStatus.PENDING, DeliveryStatus.SENDING):
        attempt_limit = max(found.attempt_limit, attempt_limit)
    retry = {**values, "tenant_id": opened.tenant, "now": now, "attempt_limit": attempt_limit}
    await opened.connection.execute(_RETRY, retry)
    retried = replace(
        found, status=DeliveryStatus.PENDING.value, next_attempt_at=now, attempt_limit=attempt_limit
    )
    return reads.delivery_out(retried, message_id, event_type)
