"""Every query of the webhooks' tables. `FOR UPDATE SKIP LOCKED` is how any number of workers share the
work without waiting on each other. Every query names its tenant, the worker's too (it goes tenant by tenant),
and joins on `tenant_id`: on a distributed database each runs on the tenant's node alone. The one exception
is `backlog`, an operator's count across tenants for `/metrics` (on Citus it asks every shard)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, case, delete, exists, func, or_, select
from sqlalchemy.orm import Session, aliased

from pokna.db.models.webhook import WebhookDelivery, WebhookEndpoint, WebhookEvent

OPEN_STATUSES = ("pending", "sending")
PURGE_BATCH = 5000  # per call; the sweep calls until nothing is left


def _event_of_delivery() -> Any:
    return and_(
        WebhookEvent.tenant_id == WebhookDelivery.tenant_id, WebhookEvent.seq == WebhookDelivery.event_seq
    )


# --- the worker ------------------------------------------------------------------------------------------


def undispatched_events(session: Session, tenant_id: str, limit: int) -> Sequence[WebhookEvent]:
    """The tenant's oldest events not yet fanned out, locked; rows another worker is fanning out are
    skipped."""
    query = (
        select(WebhookEvent)
        .where(WebhookEvent.tenant_id == tenant_id, WebhookEvent.dispatched_at.is_(None))
        .order_by(WebhookEvent.seq)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return session.scalars(query).all()


def enabled_endpoints(session: Session, tenant_id: str) -> Sequence[WebhookEndpoint]:
    query = select(WebhookEndpoint).where(
        WebhookEndpoint.tenant_id == tenant_id, WebhookEndpoint.enabled.is_(True)
    )
    return session.scalars(query.order_by(WebhookEndpoint.id)).all()


def next_due_delivery(
    session: Session, tenant_id: str, now: datetime
) -> tuple[WebhookDelivery, WebhookEvent, WebhookEndpoint] | None:
    """The tenant's oldest delivery that may be attempted now, locked (another worker's are skipped)."""
    query = (
        select(WebhookDelivery, WebhookEvent, WebhookEndpoint)
        .join(WebhookEvent, _event_of_delivery())
        .join(WebhookEndpoint, _endpoint_of_delivery())
        .where(WebhookDelivery.tenant_id == tenant_id, *_attemptable(now))
        .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.event_seq)
        .limit(1)
        .with_for_update(of=WebhookDelivery, skip_locked=True)
    )
    row = session.execute(query).first()
    return None if row is None else (row[0], row[1], row[2])


def _endpoint_of_delivery() -> ColumnElement[bool]:
    return and_(
        WebhookEndpoint.tenant_id == WebhookDelivery.tenant_id,
        WebhookEndpoint.id == WebhookDelivery.endpoint_id,
    )


def _attemptable(now: datetime) -> tuple[ColumnElement[bool], ...]:
    """A delivery a worker may attempt now (joined to its endpoint).

    Due: pending and its time has come, or `sending` whose worker's lease ran out (it died mid-attempt).
    In order: no earlier delivery of the same game (or account) to the same endpoint is still open, and
    no earlier event of it is still waiting to be fanned out."""
    earlier = aliased(WebhookDelivery)
    earlier_event = aliased(WebhookEvent)
    return (
        WebhookEndpoint.enabled.is_(True),
        or_(
            and_(WebhookDelivery.status == "pending", WebhookDelivery.next_attempt_at <= now),
            and_(WebhookDelivery.status == "sending", WebhookDelivery.locked_until <= now),
        ),
        ~exists().where(
            earlier.tenant_id == WebhookDelivery.tenant_id,
            earlier.endpoint_id == WebhookDelivery.endpoint_id,
            earlier.ordering_key == WebhookDelivery.ordering_key,
            earlier.event_seq < WebhookDelivery.event_seq,
            earlier.status.in_(OPEN_STATUSES),
        ),
        ~exists().where(
            earlier_event.tenant_id == WebhookDelivery.tenant_id,
            earlier_event.ordering_key == WebhookDelivery.ordering_key,
            earlier_event.seq < WebhookDelivery.event_seq,
            earlier_event.dispatched_at.is_(None),
        ),
    )


@dataclass(frozen=True)
class Waiting:
    count: int
    since: datetime | None
    """When the oldest became work to do; None when there is none."""


def backlog(session: Session, now: datetime) -> tuple[Waiting, Waiting]:
    """Across tenants: the events not fanned out yet (since each occurred), and the deliveries a worker may
    attempt now (since each is due). A delivery waiting out its backoff, or behind an earlier one of its
    game to the same endpoint, is no work yet: a receiver that is down does not make the worker look late."""
    events = session.execute(
        select(func.count(), func.min(WebhookEvent.occurred_at)).where(WebhookEvent.dispatched_at.is_(None))
    ).one()
    due_at = case(
        (WebhookDelivery.status == "pending", WebhookDelivery.next_attempt_at),
        else_=WebhookDelivery.locked_until,
    )
    deliveries = session.execute(
        select(func.count(), func.min(due_at))
        .select_from(WebhookDelivery)
        .join(WebhookEndpoint, _endpoint_of_delivery())
        .where(*_attemptable(now))
    ).one()
    return Waiting(int(events[0]), events[1]), Waiting(int(deliveries[0]), deliveries[1])


def claimed_delivery(session: Session, tenant_id: str, delivery_id: str) -> WebhookDelivery | None:
    return session.get(WebhookDelivery, (delivery_id, tenant_id), with_for_update=True)


def outstanding(session: Session, tenant_id: str) -> int:
    """The tenant's events not fanned out yet plus deliveries still open: zero when its outbox has nothing
    left to do."""
    events = session.scalar(
        select(func.count())
        .select_from(WebhookEvent)
        .where(WebhookEvent.tenant_id == tenant_id, WebhookEvent.dispatched_at.is_(None))
    )
    deliveries = session.scalar(
        select(func.count())
        .select_from(WebhookDelivery)
        .join(
            WebhookEndpoint,
            and_(
                WebhookEndpoint.tenant_id == WebhookDelivery.tenant_id,
                WebhookEndpoint.id == WebhookDelivery.endpoint_id,
            ),
        )
        .where(
            WebhookDelivery.tenant_id == tenant_id,
            WebhookDelivery.status.in_(OPEN_STATUSES),
            WebhookEndpoint.enabled.is_(True),
        )
    )
    return int(events or 0) + int(deliveries or 0)


def purge_finished(session: Session, tenant_id: str, older_than: datetime) -> int:
    """Delete the tenant's events fanned out before `older_than` none of whose deliveries is still open
    (their deliveries go with them)."""
    still_open = exists().where(
        WebhookDelivery.tenant_id == WebhookEvent.tenant_id,
        WebhookDelivery.event_seq == WebhookEvent.seq,
        WebhookDelivery.status.in_(OPEN_STATUSES),
    )
    seqs = session.scalars(
        select(WebhookEvent.seq)
        .where(
            WebhookEvent.tenant_id == tenant_id,
            WebhookEvent.dispatched_at.is_not(None),
            WebhookEvent.dispatched_at < older_than,
            ~still_open,
        )
        .order_by(WebhookEvent.seq)
        .limit(PURGE_BATCH)
    ).all()
    if not seqs:
        return 0
    session.execute(
        delete(WebhookDelivery).where(
            WebhookDelivery.tenant_id == tenant_id, WebhookDelivery.event_seq.in_(seqs)
        )
    )
    session.execute(
        delete(WebhookEvent).where(WebhookEvent.tenant_id == tenant_id, WebhookEvent.seq.in_(seqs))
    )
    return len(seqs)
