"""One attempt of one delivery, as the database sees it: claimed in a short transaction, sent outside
any transaction (pokna.webhooks.sending), its result recorded in another short one.

The claim is a lease: status `sending`, `locked_until` past the longest an attempt can take, and a fresh
`claim_token`. No other worker takes the delivery before the lease ends, so two attempts of one delivery
never overlap; a worker killed mid-attempt leaves a lease that runs out, and the delivery is taken again
(the receiver may then see the message twice, with the same `webhook-id`). Only the holder of the token
may record a result, so a worker that outlived its lease cannot overwrite its successor's.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from pokna.db.models.webhook import WebhookDelivery, WebhookEndpoint, WebhookEvent
from pokna.tenants import service as tenants
from pokna.webhooks import repository
from pokna.webhooks.backoff import wait_after
from pokna.webhooks.policy import DeliveryPolicy
from pokna.webhooks.schemas import AttemptError, DeliveryStatus
from pokna.webhooks.signing import open_secret


@dataclass(frozen=True)
class Claim:
    tenant_id: str
    delivery_id: str
    claim_token: str
    attempt: int
    message_id: str
    body: bytes
    url: str
    live_secrets: tuple[str, ...]  # the newest first


@dataclass(frozen=True)
class AttemptResult:
    status_code: int | None
    duration_ms: int
    error: AttemptError | None

    @property
    def delivered(self) -> bool:
        return self.error is None


def claim_next(
    session: Session,
    seed_key: bytes,
    policy: DeliveryPolicy,
    now: datetime,
    tenant_ids: Sequence[str] | None = None,
) -> Claim | None:
    """The first due delivery of the first tenant in `tenant_ids` (every tenant, in order, if None) that
    has one: tenant by tenant, so each query runs where that tenant's rows are (docs/scaling.md). The
    worker rotates the order, so no tenant's backlog holds back another's."""
    for tenant_id in tenants.tenant_ids(session) if tenant_ids is None else tenant_ids:
        found = repository.next_due_delivery(session, tenant_id, now)
        if found is not None:
            return _claimed(session, seed_key, policy, now, *found)
    return None


def _claimed(
    session: Session,
    seed_key: bytes,
    policy: DeliveryPolicy,
    now: datetime,
    delivery: WebhookDelivery,
    event: WebhookEvent,
    endpoint: WebhookEndpoint,
) -> Claim:
    delivery.status = DeliveryStatus.SENDING.value
    delivery.locked_until = now + policy.lease
    delivery.claim_token = secrets.token_hex(16)
    delivery.attempts += 1
    delivery.last_attempt_at = now
    live = [open_secret(endpoint.sealed_secret, seed_key, endpoint.id)]
    if (
        endpoint.sealed_previous_secret is not None
        and endpoint.previous_secret_expires_at is not None
        and endpoint.previous_secret_expires_at > now
    ):
        live.append(open_secret(endpoint.sealed_previous_secret, seed_key, endpoint.id))
    session.flush()
    return Claim(
        tenant_id=delivery.tenant_id,
        delivery_id=delivery.id,
        claim_token=delivery.claim_token,
        attempt=delivery.attempts,
        message_id=event.id,
        body=event.body.encode("utf-8"),
        url=endpoint.url,
        live_secrets=tuple(live),
    )


def record_result(
    session: Session, policy: DeliveryPolicy, now: datetime, claim: Claim, result: AttemptResult
) -> DeliveryStatus | None:
    """The delivery's status after the attempt; None if the claim was lost (nothing is written)."""
    delivery = repository.claimed_delivery(session, claim.tenant_id, claim.delivery_id)
    if delivery is None or delivery.claim_token != claim.claim_token:
        return None
    delivery.last_status_code = result.status_code
    delivery.last_duration_ms = result.duration_ms
    delivery.last_error = None if result.error is None else result.error.value
    delivery.locked_until = None
    delivery.claim_token = None
    if result.delivered:
        delivery.status = DeliveryStatus.DELIVERED.value
        delivery.delivered_at = now
    elif delivery.attempts >= delivery.attempt_limit:
        delivery.status = DeliveryStatus.FAILED.value
    else:
        delivery.status = DeliveryStatus.PENDING.value
        delivery.next_attempt_at = now + wait_after(
            delivery.attempts, policy.backoff_initial_seconds, policy.backoff_max_seconds
        )
    session.flush()
    return DeliveryStatus(delivery.status)
