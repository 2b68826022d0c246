"""An endpoint's deliveries as its tenant sees them, and a retry asked for by hand."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from pokna.db.models.webhook import WebhookDelivery, WebhookEvent
from pokna.errors import InvalidRequest
from pokna.outbox.events import EventType
from pokna.paging import Page, page_of
from pokna.webhooks import repository
from pokna.webhooks.errors import DeliveryInFlight, DeliveryNotFound, EndpointNotFound
from pokna.webhooks.schemas import AttemptError, DeliveryStatus, WebhookDeliveryOut


def list_deliveries(
    session: Session,
    tenant_id: str,
    endpoint_id: str,
    *,
    status: DeliveryStatus | None,
    limit: int,
    starting_after: str | None,
) -> Page[WebhookDeliveryOut]:
    """Newest first."""
    _require_endpoint(session, tenant_id, endpoint_id)
    before_seq = None
    if starting_after is not None:
        if not starting_after.isdigit():
            raise InvalidRequest("not a cursor of this list", field="query.starting_after")
        before_seq = int(starting_after)
    rows = repository.deliveries_page(
        session, tenant_id, endpoint_id, None if status is None else status.value, limit, before_seq
    )
    page = page_of(rows, limit, lambda row: str(row[0].event_seq))
    return Page[WebhookDeliveryOut](
        data=[delivery_out(delivery, event) for delivery, event in page.data],
        has_more=page.has_more,
        next_cursor=page.next_cursor,
    )


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
    return delivery_out(delivery, event)


def delivery_out(delivery: WebhookDelivery, event: WebhookEvent) -> WebhookDeliveryOut:
    status = DeliveryStatus(delivery.status)
    return WebhookDeliveryOut(
        id=delivery.id,
        endpoint_id=delivery.endpoint_id,
        message_id=event.id,
        event_type=EventType(event.type),
        status=status,
        attempts=delivery.attempts,
        attempt_limit=delivery.attempt_limit,
        next_attempt_at=delivery.next_attempt_at if status is DeliveryStatus.PENDING else None,
        last_attempt_at=delivery.last_attempt_at,
        last_status_code=delivery.last_status_code,
        last_duration_ms=delivery.last_duration_ms,
        last_error=None if delivery.last_error is None else AttemptError(delivery.last_error),
        delivered_at=delivery.delivered_at,
        created_at=delivery.created_at,
    )


def _require_endpoint(session: Session, tenant_id: str, endpoint_id: str) -> None:
    if repository.get_endpoint(session, tenant_id, endpoint_id) is None:
        raise EndpointNotFound(f"no webhook endpoint {endpoint_id}")
