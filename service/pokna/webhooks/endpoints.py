"""A tenant's webhook endpoints: made, listed, changed, deleted, and their secrets rotated.

Each function works in the caller's transaction (flushes, never commits) and answers the documented model.
A secret is answered when it is made (creation, rotation) and never again; it is stored sealed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from pokna.db.models.webhook import WebhookEndpoint
from pokna.db.types import new_id
from pokna.outbox.events import EventType
from pokna.webhooks import repository
from pokna.webhooks.addresses import UnsafeUrl, check_url
from pokna.webhooks.errors import EndpointNotFound, UnsafeWebhookUrl
from pokna.webhooks.policy import DeliveryPolicy
from pokna.webhooks.reads import endpoint_out
from pokna.webhooks.schemas import WebhookEndpointDeletedOut, WebhookEndpointOut, WebhookEndpointSecretOut
from pokna.webhooks.signing import generate_secret, seal_secret


@dataclass(frozen=True)
class NewEndpoint:
    url: str
    event_types: Sequence[EventType]
    description: str | None = None


@dataclass(frozen=True)
class EndpointChange:
    """What to change; None leaves a field as it is."""

    url: str | None = None
    event_types: Sequence[EventType] | None = None
    description: str | None = None
    enabled: bool | None = None


def create_endpoint(
    session: Session,
    seed_key: bytes,
    policy: DeliveryPolicy,
    now: datetime,
    tenant_id: str,
    draft: NewEndpoint,
) -> WebhookEndpointSecretOut:
    _check_url(draft.url, policy)
    endpoint_id = new_id("whep")
    secret = generate_secret()
    endpoint = WebhookEndpoint(
        id=endpoint_id,
        tenant_id=tenant_id,
        url=draft.url,
        description=draft.description,
        event_types=_distinct(draft.event_types),
        enabled=True,
        sealed_secret=seal_secret(secret, seed_key, endpoint_id),
        sealed_previous_secret=None,
        previous_secret_expires_at=None,
        created_at=now,
        updated_at=now,
    )
    session.add(endpoint)
    session.flush()
    return WebhookEndpointSecretOut(**endpoint_out(endpoint).model_dump(), secret=secret)


def update_endpoint(
    session: Session,
    policy: DeliveryPolicy,
    now: datetime,
    tenant_id: str,
    endpoint_id: str,
    change: EndpointChange,
) -> WebhookEndpointOut:
    """Disabling stops new deliveries and sending; enabling resumes the pending ones where they were."""
    endpoint = _endpoint(session, tenant_id, endpoint_id)
    if change.url is not None:
        _check_url(change.url, policy)
        endpoint.url = change.url
    if change.event_types is not None:
        endpoint.event_types = _distinct(change.event_types)
    if change.description is not None:
        endpoint.description = change.description
    if change.enabled is not None:
        endpoint.enabled = change.enabled
    endpoint.updated_at = now
    session.flush()
    return endpoint_out(endpoint)


def delete_endpoint(session: Session, tenant_id: str, endpoint_id: str) -> WebhookEndpointDeletedOut:
    """The endpoint and its deliveries go; the events stay for the tenant's other endpoints."""
    session.delete(_endpoint(session, tenant_id, endpoint_id))
    session.flush()
    return WebhookEndpointDeletedOut(id=endpoint_id)


def rotate_secret(
    session: Session, seed_key: bytes, policy: DeliveryPolicy, now: datetime, tenant_id: str, endpoint_id: str
) -> WebhookEndpointSecretOut:
    """A new secret signs from now on; the current one keeps signing too (a second signature in the
    header) until the overlap has passed, so receivers can switch without missing a message."""
    endpoint = _endpoint(session, tenant_id, endpoint_id)
    secret = generate_secret()
    endpoint.sealed_previous_secret = endpoint.sealed_secret
    endpoint.previous_secret_expires_at = now + policy.secret_overlap
    endpoint.sealed_secret = seal_secret(secret, seed_key, endpoint.id)
    endpoint.updated_at = now
    session.flush()
    return WebhookEndpointSecretOut(**endpoint_out(endpoint).model_dump(), secret=secret)


def _endpoint(session: Session, tenant_id: str, endpoint_id: str) -> WebhookEndpoint:
    endpoint = repository.get_endpoint(session, tenant_id, endpoint_id)
    if endpoint is None:
        raise EndpointNotFound(f"no webhook endpoint {endpoint_id}")
    return endpoint


def _check_url(url: str, policy: DeliveryPolicy) -> None:
    try:
        check_url(url, policy.urls)
    except UnsafeUrl as refusal:
        raise UnsafeWebhookUrl(str(refusal), field="body.url") from None


def _distinct(event_types: Sequence[EventType]) -> list[str]:
    return sorted({EventType(event_type).value for event_type in event_types})
