"""A tenant's webhook endpoints: made, changed, deleted, and their secrets rotated.

Each is the work of one keyed transaction (pokna.api.keyed_writes over pokna.idempotency.keyed), on the
driver: its reads (the endpoint, locked; for a creation, the tenant's endpoints counted under a lock of its
creations) go with BEGIN and the claim's hold in one round trip, its write with the stored answer and
COMMIT in the next. Every statement is bound to the tenant as a value (one shard on Citus). A secret is
answered when it is made (creation, rotation) and never again; it is stored sealed, and so are the earlier
ones still signing after a rotation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from pokna.db.types import new_id
from pokna.idempotency.keyed import Transaction
from pokna.outbox.events import EventType
from pokna.webhooks.addresses import UnsafeUrl, check_url_within
from pokna.webhooks.errors import EndpointLimitReached, SecretRotationLimit, UnsafeWebhookUrl
from pokna.webhooks.policy import MAX_ENDPOINTS, MAX_LIVE_SECRETS, DeliveryPolicy
from pokna.webhooks.reads import ENDPOINT, EndpointRecord, as_record, endpoint_found, endpoint_out
from pokna.webhooks.schemas import WebhookEndpointDeletedOut, WebhookEndpointOut, WebhookEndpointSecretOut
from pokna.webhooks.signing import generate_secret, seal_secret
from pokna_verify.invariant import present

ENDPOINT_LOCKED = ENDPOINT + " FOR UPDATE"
_CREATIONS_LOCK = 0x77686570  # "whep": with the tenant's hash, the key of its creations' advisory lock
_CREATIONS_SERIALIZED = (
    # Waits for the tenant's other creations to commit; `count(*)` makes it one row even with no endpoint,
    # and the tenant in WHERE sends it where the tenant's shard is on Citus, so the lock is taken there.
    f"SELECT pg_advisory_xact_lock({_CREATIONS_LOCK}, hashtext(%(tenant_id)s)), count(*) "  # noqa: S608
    "FROM webhook_endpoint WHERE tenant_id = %(tenant_id)s"
)
_COUNT = "SELECT count(*) FROM webhook_endpoint WHERE tenant_id = %(tenant_id)s"
"""A statement of its own after the lock: its snapshot, taken once the lock is held, sees what the
creations before it committed (READ COMMITTED)."""
_INSERT = (
    "INSERT INTO webhook_endpoint (id, tenant_id, url, description, event_types, enabled, sealed_secret, "
    "sealed_previous_secrets, previous_secrets_expire_at, created_at, updated_at) VALUES (%(endpoint_id)s, "
    "%(tenant_id)s, %(url)s, %(description)s, %(event_types)s::json, true, %(sealed_secret)s, '{}', '{}', "
    "%(now)s, %(now)s)"
)
_UPDATE = (
    "UPDATE webhook_endpoint SET url = %(url)s, description = %(description)s, "
    "event_types = %(event_types)s::json, enabled = %(enabled)s, updated_at = %(now)s "
    "WHERE tenant_id = %(tenant_id)s AND id = %(endpoint_id)s"
)
_SECRETS = (
    "SELECT sealed_secret, sealed_previous_secrets, previous_secrets_expire_at FROM webhook_endpoint "
    "WHERE tenant_id = %(tenant_id)s AND id = %(endpoint_id)s"
)
"""Sent after the endpoint's locked read in the same round trip: it reads the row that lock holds."""
_ROTATE = (
    "UPDATE webhook_endpoint SET sealed_secret = %(sealed_secret)s, "
    "sealed_previous_secrets = %(sealed_previous)s::varchar[], "
    "previous_secrets_expire_at = %(expire_at)s::timestamptz[], updated_at = %(now)s "
    "WHERE tenant_id = %(tenant_id)s AND id = %(endpoint_id)s"
)
_DELETE = "DELETE FROM webhook_endpoint WHERE tenant_id = %(tenant_id)s AND id = %(endpoint_id)s"
"""Its deliveries go with it (the foreign key cascades); the events stay for the tenant's other endpoints."""


@dataclass(frozen=True)
class NewEndpoint:
    url: str
    event_types: Sequence[EventType]
    description: str | None = None


@dataclass(frozen=True)
class EndpointChange:
    """What to change; None leaves a field as it is, but `removes_description` removes the description
    (the one field an endpoint may be without)."""

    url: str | None = None
    event_types: Sequence[EventType] | None = None
    description: str | None = None
    enabled: bool | None = None
    removes_description: bool = False


async def create_endpoint(
    opened: Transaction, seed_key: bytes, policy: DeliveryPolicy, now: datetime, draft: NewEndpoint
) -> WebhookEndpointSecretOut:
    live = await _endpoints_counted(opened)
    if live >= MAX_ENDPOINTS:
        raise EndpointLimitReached(
            f"a tenant has at most {MAX_ENDPOINTS} webhook endpoints and this one has {live}; delete one "
            "to make another",
            limit=MAX_ENDPOINTS,
        )
    await _check_url(draft.url, policy)
    endpoint_id, secret = new_id("whep"), generate_secret()
    event_types = _distinct(draft.event_types)
    values = {
        "tenant_id": opened.tenant,
        "endpoint_id": endpoint_id,
        "url": draft.url,
        "description": draft.description,
        "event_types": json.dumps(event_types),
        "sealed_secret": seal_secret(secret, seed_key, endpoint_id),
        "now": now,
    }
    await opened.connection.execute(_INSERT, values)
    made = EndpointRecord(endpoint_id, draft.url, draft.description, event_types, True, None, now, now)
    return WebhookEndpointSecretOut(**endpoint_out(made).model_dump(), secret=secret)


async def update_endpoint(
    opened: Transaction, policy: DeliveryPolicy, now: datetime, endpoint_id: str, change: EndpointChange
) -> WebhookEndpointOut:
    """Disabling stops new deliveries and sending; enabling resumes the pending ones where they were."""
    endpoint = await _locked(opened, endpoint_id)
    if change.url is not None:
        await _check_url(change.url, policy)
    changed = replace(
        endpoint,
        url=endpoint.url if change.url is None else change.url,
        description=_description(endpoint.description, change),
        event_types=endpoint.event_types if change.event_types is None else _distinct(change.event_types),
        enabled=endpoint.enabled if change.enabled is None else change.enabled,
        updated_at=now,
    )
    values = {
        "tenant_id": opened.tenant,
        "endpoint_id": endpoint_id,
        "url": changed.url,
        "description": changed.description,
        "event_types": json.dumps(changed.event_types),
        "enabled": changed.enabled,
        "now": now,
    }
    await opened.connection.execute(_UPDATE, values)
    return endpoint_out(changed)


def _description(current: str | None, change: EndpointChange) -> str | None:
    if change.removes_description:
        return None
    return current if change.description is None else change.description


async def delete_endpoint(opened: Transaction, endpoint_id: str) -> WebhookEndpointDeletedOut:
    await _locked(opened, endpoint_id)
    await opened.connection.execute(_DELETE, {"tenant_id": opened.tenant, "endpoint_id": endpoint_id})
    return WebhookEndpointDeletedOut(id=endpoint_id)


async def rotate_secret(
    opened: Transaction, seed_key: bytes, policy: DeliveryPolicy, now: datetime, endpoint_id: str
) -> WebhookEndpointSecretOut:
    """A new secret signs from now on; the current one keeps signing too (one more signature in the
    header) until the overlap has passed, so receivers can switch without missing a message.

    An earlier rotation's promise is kept: a secret it retired signs on until its own overlap ends, however
    often the secret is rotated meanwhile (Stripe and Svix keep an old secret to its own expiry too), so a
    receiver that was told "a day" gets the day. Those whose overlap is over are dropped here. At most
    MAX_LIVE_SECRETS sign at once: a rotation that would need one more is refused (SecretRotationLimit,
    with when to rotate again) rather than cutting short a promise made."""
    endpoint, (sealed_current, earlier) = await _locked_with_secrets(opened, endpoint_id)
    retired = [(sealed_current, now + policy.secret_overlap), *_still_signing(earlier, now)]
    if len(retired) >= MAX_LIVE_SECRETS:
        oldest_end = min(expires_at for _, expires_at in retired[1:])
        raise SecretRotationLimit(
            f"an endpoint signs with at most {MAX_LIVE_SECRETS} secrets at once, and each of its "
            f"{len(retired) - 1} earlier ones is still promised to sign; rotate again after "
            f"{_iso(oldest_end)}, when the oldest one's overlap ends",
            limit=MAX_LIVE_SECRETS,
            rotate_again_after=_iso(oldest_end),
        )
    secret = generate_secret()
    rotated = replace(endpoint, previous_secret_expires_at=max(end for _, end in retired), updated_at=now)
    values = {
        "tenant_id": opened.tenant,
        "endpoint_id": endpoint_id,
        "sealed_secret": seal_secret(secret, seed_key, endpoint_id),
        "sealed_previous": [sealed for sealed, _ in retired],
        "expire_at": [expires_at for _, expires_at in retired],
        "now": now,
    }
    await opened.connection.execute(_ROTATE, values)
    return WebhookEndpointSecretOut(**endpoint_out(rotated).model_dump(), secret=secret)


def _still_signing(earlier: list[tuple[str, datetime]], now: datetime) -> list[tuple[str, datetime]]:
    return [(sealed, expires_at) for sealed, expires_at in earlier if expires_at > now]


def _iso(moment: datetime) -> str:
    """As the answers write a time (RFC 3339 in UTC, `Z`)."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


async def _endpoints_counted(opened: Transaction) -> int:
    """BEGIN and the claim's hold (or the API key's check), then the tenant's endpoints counted under a
    lock its other creations wait for until this one ends: two at the limit's last place cannot both
    pass."""

    async def queue(tenant_id: str) -> Any:
        await opened.connection.execute(_CREATIONS_SERIALIZED, {"tenant_id": tenant_id})
        return await opened.connection.execute(_COUNT, {"tenant_id": tenant_id})

    row = await (await opened.read(queue)).fetchone()
    return int(present(row, "an aggregate answers one row")[0])


async def _locked(opened: Transaction, endpoint_id: str) -> EndpointRecord:
    """The tenant's endpoint, locked to the transaction's end."""

    async def queue(tenant_id: str) -> Any:
        values = {"tenant_id": tenant_id, "endpoint_id": endpoint_id}
        return await opened.connection.execute(ENDPOINT_LOCKED, values)

    return as_record(EndpointRecord, endpoint_found(endpoint_id, await (await opened.read(queue)).fetchone()))


async def _locked_with_secrets(
    opened: Transaction, endpoint_id: str
) -> tuple[EndpointRecord, tuple[str, list[tuple[str, datetime]]]]:
    """The endpoint locked, with its sealed current secret and its earlier ones (sealed, each with its
    end), newest first: one round trip."""

    async def queue(tenant_id: str) -> tuple[Any, Any]:
        values = {"tenant_id": tenant_id, "endpoint_id": endpoint_id}
        locked = await opened.connection.execute(ENDPOINT_LOCKED, values)
        return locked, await opened.connection.execute(_SECRETS, values)

    locked, secrets = await opened.read(queue)
    endpoint = as_record(EndpointRecord, endpoint_found(endpoint_id, await locked.fetchone()))
    row = present(await secrets.fetchone(), "the secrets of the endpoint row the lock holds")
    return endpoint, (row[0], list(zip(row[1], row[2], strict=True)))


async def _check_url(url: str, policy: DeliveryPolicy) -> None:
    """Where the policy wants public addresses only, the host is resolved now; otherwise no I/O.

    The one thread hop on a request's road, kept on purpose, and not the database's (the "no thread hop"
    rule is about the road to the database: docs/architecture.md). The system's resolver (getaddrinfo:
    /etc/hosts, nsswitch, the stub resolver) blocks, and it is the resolver the delivery checks the same
    name with again (pokna.webhooks.addresses.resolve_host), so the two checks agree; an async DNS client
    would not read /etc/hosts or nsswitch, so an endpoint could pass here and fail at delivery, or the
    reverse. So the lookup runs in a thread of its own, and is given up after the webhook timeout (a
    refusal: the host does not resolve now), so a slow resolver neither stalls the loop's other requests
    nor holds this one's transaction open for longer. Only an endpoint's creation or a change of its URL,
    under the production policy, resolves."""
    try:
        await check_url_within(url, policy.urls, policy.timeout_seconds)
    except UnsafeUrl as refusal:
        raise UnsafeWebhookUrl(str(refusal), field="body.url") from None


def _distinct(event_types: Sequence[EventType]) -> list[str]:
    return sorted({EventType(event_type).value for event_type in event_types})
