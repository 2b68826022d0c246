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
from typing import Any

from psycopg import AsyncConnection

from pokna.tenants.service import tenant_ids_async
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
    asked_wait_seconds: float | None = None
    """What a 429 or 503 asked for with `Retry-After`, in seconds from its answer (backoff.asked_wait)."""

    @property
    def delivered(self) -> bool:
        return self.error is None


async def claim_next(
    connection: AsyncConnection[Any],
    seed_key: bytes,
    policy: DeliveryPolicy,
    now: datetime,
    tenant_ids: Sequence[str] | None = None,
) -> Claim | None:
    """The first due delivery of the first tenant in `tenant_ids` (every tenant, in order, if None) that
    has one, claimed in one transaction: tenant by tenant, so each query runs where that tenant's rows are
    (docs/scaling.md). The worker rotates the order, so no tenant's backlog holds back another's."""
    async with connection.transaction():
        for tenant_id in await tenant_ids_async(connection) if tenant_ids is None else tenant_ids:
            found = await repository.next_due_delivery(connection, tenant_id, now)
            if found is not None:
                return await _claimed(connection, seed_key, policy, now, tenant_id, found)
    return None


async def _claimed(
    connection: AsyncConnection[Any],
    seed_key: bytes,
    policy: DeliveryPolicy,
    now: datetime,
    tenant_id: str,
    due: repository.Due,
) -> Claim:
    claim_token, attempt = secrets.token_hex(16), due.attempts + 1
    live = [open_secret(due.sealed_secret, seed_key, due.endpoint_id)]
    for sealed, expires_at in zip(due.sealed_previous_secrets, due.previous_secrets_expire_at, strict=True):
        if expires_at > now:  # each earlier secret until the end its own rotation promised
            live.append(open_secret(sealed, seed_key, due.endpoint_id))
    lease = {"locked_until": now + policy.lease, "claim_token": claim_token, "attempts": attempt, "now": now}
    await repository.claim(connection, tenant_id, due.delivery_id, **lease)
    return Claim(
        tenant_id=tenant_id,
        delivery_id=due.delivery_id,
        claim_token=claim_token,
        attempt=attempt,
        message_id=due.message_id,
        body=due.body.encode("utf-8"),
        url=due.url,
        live_secrets=tuple(live),
    )


async def record_result(
    connection: AsyncConnection[Any],
    policy: DeliveryPolicy,
    now: datetime,
    claim: Claim,
    result: AttemptResult,
) -> DeliveryStatus | None:
    """The delivery's status after the attempt, in one transaction; None if the claim was lost (nothing
    is written)."""
    async with connection.transaction():
        found = await repository.claimed_delivery(connection, claim.tenant_id, claim.delivery_id)
        if found is None or found[0] != claim.claim_token:
            return None
        _token, attempts, attempt_limit = found
        delivered_at = next_attempt_at = None
        if result.delivered:
            status, delivered_at = DeliveryStatus.DELIVERED, now
        elif attempts >= attempt_limit:
            status = DeliveryStatus.FAILED
        else:
            status = DeliveryStatus.PENDING
            next_attempt_at = now + wait_after(
                attempts,
                policy.backoff_initial_seconds,
                policy.backoff_max_seconds,
                asked_seconds=result.asked_wait_seconds,
            )
        await repository.record(
            connection,
            claim.tenant_id,
            claim.delivery_id,
            status_code=result.status_code,
            duration_ms=result.duration_ms,
            error=None if result.error is None else result.error.value,
            status=status.value,
            delivered_at=delivered_at,
            next_attempt_at=next_attempt_at,
        )
    return status
