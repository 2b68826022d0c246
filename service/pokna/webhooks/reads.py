"""What a tenant reads of its webhooks over the API: its endpoints, one endpoint, an endpoint's deliveries;
and the answers those and the writes give (`endpoint_out`, `delivery_out`).

Async, on the driver, each read sent beside the API key's check in one round trip
(pokna.tenants.authentication.read_beside), every statement bound to the tenant as a value (one shard on
Citus, docs/scaling.md). A page of deliveries is sent with its endpoint's check in the same trip."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from psycopg import AsyncConnection, AsyncCursor

from pokna.errors import InvalidRequest
from pokna.outbox.events import EventType
from pokna.paging import Page, page_of
from pokna.tenants.authentication import read_beside
from pokna.webhooks.errors import EndpointNotFound
from pokna.webhooks.schemas import AttemptError, DeliveryStatus, WebhookDeliveryOut, WebhookEndpointOut


@dataclass(frozen=True)
class EndpointRecord:
    """An endpoint as a tenant may see it: never its secrets."""

    id: str
    url: str
    description: str | None
    event_types: list[str]
    enabled: bool
    previous_secret_expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class DeliveryRecord:
    id: str
    endpoint_id: str
    status: str
    attempts: int
    attempt_limit: int
    next_attempt_at: datetime
    last_attempt_at: datetime | None
    last_status_code: int | None
    last_duration_ms: int | None
    last_error: str | None
    delivered_at: datetime | None
    created_at: datetime


_COLUMN_OF = {
    # When the last of the earlier secrets stops signing (pokna.webhooks.endpoints.rotate_secret).
    "previous_secret_expires_at": "(SELECT max(ends) FROM unnest(previous_secrets_expire_at) AS ends)"
}
_ENDPOINT_COLUMNS = ", ".join(_COLUMN_OF.get(name, name) for name in EndpointRecord.__dataclass_fields__)
_ENDPOINTS = f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoint WHERE tenant_id = %(tenant_id)s"  # noqa: S608
ENDPOINT = _ENDPOINTS + " AND id = %(endpoint_id)s"
ENDPOINTS = _ENDPOINTS + " ORDER BY id LIMIT %(limit)s"
ENDPOINTS_AFTER = _ENDPOINTS + " AND id > %(after)s ORDER BY id LIMIT %(limit)s"

DELIVERY_COLUMNS = ", ".join(f"delivery.{column}" for column in DeliveryRecord.__dataclass_fields__)
_DELIVERIES = (
    f"SELECT event.seq, event.id, event.type, {DELIVERY_COLUMNS} "  # noqa: S608
    "FROM webhook_delivery AS delivery JOIN webhook_event AS event "
    "ON event.tenant_id = delivery.tenant_id AND event.seq = delivery.event_seq "
    "WHERE delivery.tenant_id = %(tenant_id)s AND delivery.endpoint_id = %(endpoint_id)s"
)


def deliveries_statement(status: bool, before: bool) -> str:
    """Newest first (the cursor is the event's place in the outbox), of one status or all, from a cursor
    or not: a text of its own for each, so that each is prepared with its own plan."""
    return (
        _DELIVERIES
        + (" AND delivery.status = %(status)s" if status else "")
        + (" AND delivery.event_seq < %(before)s" if before else "")
        + " ORDER BY delivery.event_seq DESC LIMIT %(limit)s"
    )


async def list_endpoints(
    connection: AsyncConnection[Any], api_key_digest: str, *, limit: int, starting_after: str | None
) -> Page[WebhookEndpointOut]:
    """In the order of their ids, `limit` at a time; the cursor is the last one's id."""
    statement = ENDPOINTS if starting_after is None else ENDPOINTS_AFTER
    values = {"limit": limit + 1, "after": starting_after}
    _, found = await read_beside(connection, api_key_digest, _queue(connection, statement, values))
    endpoints = [endpoint_out(as_record(EndpointRecord, row)) for row in await found.fetchall()]
    return page_of(endpoints, limit, lambda endpoint: endpoint.id)


async def get_endpoint(
    connection: AsyncConnection[Any], api_key_digest: str, endpoint_id: str
) -> WebhookEndpointOut:
    values = {"endpoint_id": endpoint_id}
    _, found = await read_beside(connection, api_key_digest, _queue(connection, ENDPOINT, values))
    return endpoint_out(as_record(EndpointRecord, endpoint_found(endpoint_id, await found.fetchone())))


async def list_deliveries(
    connection: AsyncConnection[Any],
    api_key_digest: str,
    endpoint_id: str,
    *,
    status: DeliveryStatus | None,
    limit: int,
    starting_after: str | None,
) -> Page[WebhookDeliveryOut]:
    """Newest first. Another tenant's endpoint is as absent as none (EndpointNotFound), before a cursor
    that is not one of this list's is refused."""
    before = None if starting_after is None or not starting_after.isdigit() else int(starting_after)
    values = {
        "endpoint_id": endpoint_id,
        "status": None if status is None else status.value,
        "before": before,
        "limit": limit + 1,
    }
    statement = deliveries_statement(status is not None, before is not None)
    bad_cursor = starting_after is not None and before is None

    async def queue(tenant_id: str) -> tuple[AsyncCursor[Any], AsyncCursor[Any] | None]:
        endpoint = await _queue(connection, ENDPOINT, values)(tenant_id)
        return endpoint, None if bad_cursor else await _queue(connection, statement, values)(tenant_id)

    _, (endpoint, deliveries) = await read_beside(connection, api_key_digest, queue)
    endpoint_found(endpoint_id, await endpoint.fetchone())
    if deliveries is None:
        raise InvalidRequest("not a cursor of this list", field="query.starting_after")
    page = page_of(await deliveries.fetchall(), limit, lambda row: str(row[0]))
    return Page[WebhookDeliveryOut](
        data=[delivery_out(as_record(DeliveryRecord, row[3:]), row[1], row[2]) for row in page.data],
        has_more=page.has_more,
        next_cursor=page.next_cursor,
    )


def endpoint_out(endpoint: EndpointRecord) -> WebhookEndpointOut:
    return WebhookEndpointOut.model_validate(endpoint, from_attributes=True)


def delivery_out(delivery: DeliveryRecord, message_id: str, event_type: str) -> WebhookDeliveryOut:
    """The delivery of the event `message_id` (its `webhook-id`) of `event_type`."""
    status = DeliveryStatus(delivery.status)
    return WebhookDeliveryOut(
        id=delivery.id,
        endpoint_id=delivery.endpoint_id,
        message_id=message_id,
        event_type=EventType(event_type),
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


def _queue(
    connection: AsyncConnection[Any], statement: str, values: dict[str, Any]
) -> Callable[[str], Awaitable[AsyncCursor[Any]]]:
    async def queue(tenant_id: str) -> AsyncCursor[Any]:
        return await connection.execute(statement, {"tenant_id": tenant_id, **values})

    return queue


def endpoint_found(endpoint_id: str, row: Sequence[Any] | None) -> Sequence[Any]:
    """The endpoint's row, read beside what the request asks of it; another tenant's is as absent as none."""
    if row is None:
        raise EndpointNotFound(f"no webhook endpoint {endpoint_id}")
    return row


Record = TypeVar("Record", EndpointRecord, DeliveryRecord)


def as_record(kind: type[Record], row: Sequence[Any]) -> Record:
    """The row of `kind`'s columns, in their order, with its times in UTC (as the ORM reads them)."""
    values: dict[str, Any] = dict(zip(kind.__dataclass_fields__, row, strict=True))
    return kind(**{name: _in_utc(value) for name, value in values.items()})


def _in_utc(value: Any) -> Any:
    return value.astimezone(UTC) if isinstance(value, datetime) else value
