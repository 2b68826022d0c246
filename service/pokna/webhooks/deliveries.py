"""A delivery's retry asked for by hand (what a tenant reads of its deliveries is pokna.webhooks.reads)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from pokna.webhooks import repository
from pokna.webhooks.errors import DeliveryInFlight, DeliveryNotFound, EndpointNotFound
from pokna.webhooks.reads import delivery_out
from pokna.webhooks.schemas import DeliveryStatus, WebhookDeliveryOut


def retry_delivery(
    session: Session, now: datetime, tenant_id: str, endpoint_id: str, delivery_id: str
) -> WebhookDeliveryOut:
    """One more attempt, due now, whatever the delivery's state (a delivered one is sent again with the
    same `webhook-id`); if it fails, the delivery is failed again. Refused while an attempt is in flight."""
    _require_endpoint(session, tenant_id, endpoint_id)
    found = repository.get_delivery(session, tenant_id, endpoint_id, delivery_id)
    if found is None:
        raise DeliveryNotFound(f"no delivery {delivery_id} of webhook endpoint {endpoint_id}")
    delivery, event = found
    if delivery.status == DeliveryStatus.SENDING and delivery.locked_until and delivery.locked_until > now:
        raise DeliveryInFlight(f"delivery {delivery_id} is being attempted; ask again once it is done")
    delivery.status = DeliveryStatus.PENDING.value
    delivery.next_attempt_at = now
    delivery.attempt_limit = delivery.attempts + 1
    delivery.locked_until = None
    delivery.claim_token = None
    session.flush()
    return delivery_out(delivery, event.id, event.type)


def _require_endpoint(session: Session, tenant_id: str, endpoint_id: str) -> None:
    if repository.get_endpoint(session, tenant_id, endpoint_id) is None:
        raise EndpointNotFound(f"no webhook endpoint {endpoint_id}")
