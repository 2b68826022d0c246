"""Every query of the webhooks worker, the sweep's purge and `/metrics`' backlog, as driver text on an
async connection. `FOR UPDATE SKIP LOCKED` is how any number of workers share the work without waiting on
each other. Every query names its tenant, the worker's too (it goes tenant by tenant), and joins on
`tenant_id`: on a distributed database each runs on the tenant's node alone. The one exception is
`webhook_backlog`, an operator's count across tenants for `/metrics` (on Citus it asks every shard)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection

from pokna_verify.invariant import present

PURGE_BATCH = 5000  # per call; the sweep calls until nothing is left

_ENDPOINT_OF_DELIVERY = "endpoint.tenant_id = delivery.tenant_id AND endpoint.id = delivery.endpoint_id"
_ATTEMPTABLE = (
    # Due: pending and its time has come, or `sending` whose worker's lease ran out (it died mid-attempt).
    # In order: no earlier delivery of the same game (or account) to the same endpoint is still open, and
    # no earlier event of it is still waiting to be fanned out.
    "endpoint.enabled AND ((delivery.status = 'pending' AND delivery.next_attempt_at <= %(now)s) "
    "OR (delivery.status = 'sending' AND delivery.locked_until <= %(now)s)) "
    "AND NOT EXISTS (SELECT FROM webhook_delivery AS earlier WHERE earlier.tenant_id = delivery.tenant_id "
    "AND earlier.endpoint_id = delivery.endpoint_id AND earlier.ordering_key = delivery.ordering_key "
    "AND earlier.event_seq < delivery.event_seq AND earlier.status IN ('pending', 'sending')) "
    "AND NOT EXISTS (SELECT FROM webhook_event AS earlier_event "
    "WHERE earlier_event.tenant_id = delivery.tenant_id "
    "AND earlier_event.ordering_key = delivery.ordering_key AND earlier_event.seq < delivery.event_seq "
    "AND earlier_event.dispatched_at IS NULL)"
)

_UNDISPATCHED = (
    "SELECT seq, type, ordering_key FROM webhook_event WHERE tenant_id = %(tenant_id)s "
    "AND dispatched_at IS NULL ORDER BY seq LIMIT %(limit)s FOR UPDATE SKIP LOCKED"
)
# Locked (FOR KEY SHARE, which an endpoint's change or deletion waits for): one deleted meanwhile would make
# its deliveries' insert break the foreign key; one being deleted is waited for, then left out.
_ENABLED_ENDPOINTS = (
    "SELECT id, event_types FROM webhook_endpoint WHERE tenant_id = %(tenant_id)s AND enabled ORDER BY id "
    "FOR KEY SHARE"
)
_INSERT_DELIVERY = (
    "INSERT INTO webhook_delivery (id, event_seq, endpoint_id, tenant_id, ordering_key, status, attempts, "
    "attempt_limit, next_attempt_at, created_at) VALUES (%(id)s, %(event_seq)s, %(endpoint_id)s, "
    "%(tenant_id)s, %(ordering_key)s, 'pending', 0, %(attempt_limit)s, %(now)s, %(now)s)"
)
_DISPATCHED = (
    "UPDATE webhook_event SET dispatched_at = %(now)s WHERE tenant_id = %(tenant_id)s AND seq = ANY(%(seqs)s)"
)
_NEXT_DUE = (
    "SELECT delivery.id, delivery.attempts, event.id, event.body, endpoint.id, endpoint.url, "  # noqa: S608
    "endpoint.sealed_secret, endpoint.sealed_previous_secrets, endpoint.previous_secrets_expire_at "
    "FROM webhook_delivery AS delivery JOIN webhook_event AS event "
    "ON event.tenant_id = delivery.tenant_id AND event.seq = delivery.event_seq "
    f"JOIN webhook_endpoint AS endpoint ON {_ENDPOINT_OF_DELIVERY} "
    f"WHERE delivery.tenant_id = %(tenant_id)s AND {_ATTEMPTABLE} "
    "ORDER BY delivery.next_attempt_at, delivery.event_seq LIMIT 1 FOR UPDATE OF delivery SKIP LOCKED"
)
_CLAIM = (
    "UPDATE webhook_delivery SET status = 'sending', locked_until = %(locked_until)s, "
    "claim_token = %(claim_token)s, attempts = %(attempts)s, last_attempt_at = %(now)s "
    "WHERE tenant_id = %(tenant_id)s AND id = %(delivery_id)s"
)
_CLAIMED = (
    "SELECT claim_token, attempts, attempt_limit FROM webhook_delivery "
    "WHERE tenant_id = %(tenant_id)s AND id = %(delivery_id)s FOR UPDATE"
)
_RECORD = (
    "UPDATE webhook_delivery SET last_status_code = %(status_code)s, last_duration_ms = %(duration_ms)s, "
    "last_error = %(error)s, locked_until = NULL, claim_token = NULL, status = %(status)s, "
    "delivered_at = coalesce(%(delivered_at)s, delivered_at), "
    "next_attempt_at = coalesce(%(next_attempt_at)s, next_attempt_at) "
    "WHERE tenant_id = %(tenant_id)s AND id = %(delivery_id)s"
)
_EVENTS_OUTSTANDING = (
    "SELECT count(*) FROM webhook_event WHERE tenant_id = %(tenant_id)s AND dispatched_at IS NULL"
)
_DELIVERIES_OUTSTANDING = (
    "SELECT count(*) FROM webhook_delivery AS delivery JOIN webhook_endpoint AS endpoint "
    "ON endpoint.tenant_id = delivery.tenant_id AND endpoint.id = delivery.endpoint_id "
    "WHERE delivery.tenant_id = %(tenant_id)s AND delivery.status IN ('pending', 'sending') AND endpoint.enabled"
)
_EVENTS_WAITING = "SELECT count(*), min(occurred_at) FROM webhook_event WHERE dispatched_at IS NULL"
_DELIVERIES_DUE = (
    "SELECT count(*), min(CASE WHEN delivery.status = 'pending' THEN delivery.next_attempt_at "  # noqa: S608
    "ELSE delivery.locked_until END) FROM webhook_delivery AS delivery "
    f"JOIN webhook_endpoint AS endpoint ON {_ENDPOINT_OF_DELIVERY} WHERE {_ATTEMPTABLE}"
)
_PURGEABLE = (
    "SELECT seq FROM webhook_event AS event WHERE tenant_id = %(tenant_id)s AND dispatched_at IS NOT NULL "
    "AND dispatched_at < %(older_than)s AND NOT EXISTS (SELECT FROM webhook_delivery AS delivery "
    "WHERE delivery.tenant_id = event.tenant_id AND delivery.event_seq = event.seq "
    "AND delivery.status IN ('pending', 'sending')) ORDER BY seq LIMIT %(limit)s"
)
# Both deletes check again what the pick saw: a delivery retried by hand since (pending again, waited on
# by the first delete, which then reads its new status) stays, and so does its event (the second delete
# sees it: the deliveries would go with the event, the foreign key cascades).
_PURGE_DELIVERIES = (
    "DELETE FROM webhook_delivery WHERE tenant_id = %(tenant_id)s AND event_seq = ANY(%(seqs)s) "
    "AND status IN ('delivered', 'failed')"
)
_PURGE_EVENTS = (
    "DELETE FROM webhook_event AS event WHERE tenant_id = %(tenant_id)s AND seq = ANY(%(seqs)s) "
    "AND NOT EXISTS (SELECT FROM webhook_delivery AS delivery WHERE delivery.tenant_id = event.tenant_id "
    "AND delivery.event_seq = event.seq)"
)

Connection = AsyncConnection[Any]


async def undispatched_events(
    connection: Connection, tenant_id: str, limit: int
) -> list[tuple[int, str, str]]:
    """(seq, type, ordering key) of the tenant's oldest events not yet fanned out, locked; rows another
    worker is fanning out are skipped."""
    found = await connection.execute(_UNDISPATCHED, {"tenant_id": tenant_id, "limit": limit})
    return [(int(seq), kind, key) for seq, kind, key in await found.fetchall()]


async def enabled_endpoints(connection: Connection, tenant_id: str) -> list[tuple[str, set[str]]]:
    found = await connection.execute(_ENABLED_ENDPOINTS, {"tenant_id": tenant_id})
    return [(row[0], set(row[1])) for row in await found.fetchall()]


async def add_deliveries(
    connection: Connection,
    tenant_id: str,
    now: datetime,
    seqs: Sequence[int],
    deliveries: list[dict[str, Any]],
) -> None:
    """The deliveries (each `id`, `event_seq`, `endpoint_id`, `ordering_key`, `attempt_limit`), pending from
    `now`, and their events (`seqs`) marked fanned out."""
    async with connection.cursor() as cursor:
        if deliveries:
            await cursor.executemany(
                _INSERT_DELIVERY, [{**row, "tenant_id": tenant_id, "now": now} for row in deliveries]
            )
        await cursor.execute(_DISPATCHED, {"tenant_id": tenant_id, "now": now, "seqs": list(seqs)})


@dataclass(frozen=True)
class Due:
    """A due delivery, locked, with what an attempt of it needs of its event and endpoint."""

    delivery_id: str
    attempts: int
    message_id: str
    body: str
    endpoint_id: str
    url: str
    sealed_secret: str
    sealed_previous_secrets: list[str]  # the earlier secrets, newest first
    previous_secrets_expire_at: list[datetime]  # when each stops signing


async def next_due_delivery(connection: Connection, tenant_id: str, now: datetime) -> Due | None:
    """The tenant's oldest delivery that may be attempted now, locked (another worker's are skipped)."""
    row = await (await connection.execute(_NEXT_DUE, {"tenant_id": tenant_id, "now": now})).fetchone()
    return None if row is None else Due(*row)


async def claim(connection: Connection, tenant_id: str, delivery_id: str, **lease: Any) -> None:
    """The lease on the delivery: `locked_until`, `claim_token`, `attempts` and `now`."""
    await connection.execute(_CLAIM, {"tenant_id": tenant_id, "delivery_id": delivery_id, **lease})


async def claimed_delivery(
    connection: Connection, tenant_id: str, delivery_id: str
) -> tuple[str | None, int, int] | None:
    """The delivery's claim token, attempts and attempt limit, locked; None if it is gone."""
    values = {"tenant_id": tenant_id, "delivery_id": delivery_id}
    row = await (await connection.execute(_CLAIMED, values)).fetchone()
    return None if row is None else (row[0], int(row[1]), int(row[2]))


async def record(connection: Connection, tenant_id: str, delivery_id: str, **result: Any) -> None:
    """The attempt's result (`status_code`, `duration_ms`, `error`, `status`, `delivered_at`,
    `next_attempt_at`: a None time is left as it was), and the lease let go."""
    await connection.execute(_RECORD, {"tenant_id": tenant_id, "delivery_id": delivery_id, **result})


@dataclass(frozen=True)
class Waiting:
    count: int
    since: datetime | None
    """When the oldest became work to do; None when there is none."""


@dataclass(frozen=True)
class WebhookBacklog:
    """What the webhooks worker has still to do, across tenants: fan events out, attempt due deliveries."""

    fan_out: Waiting
    delivery: Waiting


async def webhook_backlog(connection: Connection, now: datetime) -> WebhookBacklog:
    """For `/metrics`, where a stopped or slow worker shows as work waiting longer and longer: the events
    not fanned out yet (since each occurred), and the deliveries a worker may attempt now (since each is
    due). One waiting out its backoff, or behind an earlier one of its game to the same endpoint, is no
    work yet: a receiver that is down does not make the worker look late."""
    events = await (await connection.execute(_EVENTS_WAITING)).fetchone()
    deliveries = await (await connection.execute(_DELIVERIES_DUE, {"now": now})).fetchone()
    events = present(events, "an aggregate answers one row")
    deliveries = present(deliveries, "an aggregate answers one row")
    return WebhookBacklog(Waiting(int(events[0]), events[1]), Waiting(int(deliveries[0]), deliveries[1]))


async def outstanding(connection: Connection, tenant_id: str) -> int:
    """The tenant's events not fanned out yet plus deliveries still open: zero when its outbox has nothing
    left to do."""
    left = 0
    for statement in (_EVENTS_OUTSTANDING, _DELIVERIES_OUTSTANDING):
        row = await (await connection.execute(statement, {"tenant_id": tenant_id})).fetchone()
        left += 0 if row is None else int(row[0])
    return left


async def purge_finished(connection: Connection, tenant_id: str, older_than: datetime) -> int:
    """Delete the tenant's events fanned out before `older_than` none of whose deliveries is still open
    (their deliveries go with them); how many went."""
    values: dict[str, Any] = {"tenant_id": tenant_id, "older_than": older_than, "limit": PURGE_BATCH}
    seqs = [row[0] for row in await (await connection.execute(_PURGEABLE, values)).fetchall()]
    if not seqs:
        return 0
    await connection.execute(_PURGE_DELIVERIES, {"tenant_id": tenant_id, "seqs": seqs})
    purged = await connection.execute(_PURGE_EVENTS, {"tenant_id": tenant_id, "seqs": seqs})
    return purged.rowcount
