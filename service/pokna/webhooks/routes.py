"""Webhook endpoints over REST: the tenant makes, lists, changes, deletes and rotates them, and looks at
and retries their deliveries. Thin: parse, call pokna.webhooks.service (the writes, each the work of
one keyed transaction: pokna.api.keyed_writes) or pokna.webhooks.reads (the reads); all async, on the
driver. Answer its model."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from pokna.api.auth import ApiKeyDigestDep
from pokna.api.deps import RuntimeDep, driver_connection
from pokna.api.fields import NoNul
from pokna.api.keyed_writes import KeyedWriteDep
from pokna.api.pagination import Page, PageDep
from pokna.api.problem_docs import BAD_CURSOR, IDEMPOTENT, JSON_BODY, KEYED, VALIDATION, problems
from pokna.api.written_numbers import WrittenNumbersRoute
from pokna.db.types import utc_now
from pokna.idempotency.keyed import Transaction
from pokna.webhooks import reads
from pokna.webhooks import service as webhooks
from pokna.webhooks.policy import MAX_ENDPOINTS, MAX_LIVE_SECRETS
from pokna.webhooks.problem_docs import (
    DELIVERY_IN_FLIGHT,
    DELIVERY_NOT_FOUND,
    ENDPOINT_LIMIT_REACHED,
    ENDPOINT_NOT_FOUND,
    SECRET_ROTATION_LIMIT,
    UNSAFE_WEBHOOK_URL,
)
from pokna.webhooks.requests import WebhookEndpointCreate, WebhookEndpointUpdate
from pokna.webhooks.schemas import (
    DeliveryStatus,
    WebhookDeliveryOut,
    WebhookEndpointDeletedOut,
    WebhookEndpointOut,
    WebhookEndpointSecretOut,
)

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"], route_class=WrittenNumbersRoute)

EndpointId = Annotated[str, Path(max_length=40, description="The endpoint's id (`whep_...`)."), NoNul]
DeliveryId = Annotated[str, Path(max_length=40, description="The delivery's id (`whdl_...`)."), NoNul]


@router.post(
    "/endpoints",
    status_code=201,
    response_model=WebhookEndpointSecretOut,
    summary="Create a webhook endpoint; its signing secret is in this answer only",
    description="Events of the chosen types are POSTed to the URL, signed per Standard Webhooks "
    "(`webhook-id`, `webhook-timestamp`, `webhook-signature`). Keep the `secret`: it is never shown again. "
    f"A tenant has at most {MAX_ENDPOINTS} endpoints, enabled or disabled; deleting one frees its place.",
    responses=problems(KEYED, JSON_BODY, IDEMPOTENT, UNSAFE_WEBHOOK_URL, ENDPOINT_LIMIT_REACHED),
)
async def create_endpoint(
    body: WebhookEndpointCreate, runtime: RuntimeDep, write: KeyedWriteDep
) -> WebhookEndpointSecretOut:
    draft = webhooks.NewEndpoint(url=body.url, event_types=body.event_types, description=body.description)
    policy = webhooks.DeliveryPolicy.from_settings(runtime.settings)

    async def work(opened: Transaction) -> WebhookEndpointSecretOut:
        return await webhooks.create_endpoint(opened, runtime.keys.seed_key, policy, utc_now(), draft)

    return await write(WebhookEndpointSecretOut, work, status=201)


@router.get(
    "/endpoints",
    response_model=Page[WebhookEndpointOut],
    summary="The tenant's webhook endpoints",
    description="Newest first, a page at a time; the secrets are never shown again.",
    responses=problems(KEYED, VALIDATION),
)
async def list_endpoints(
    page: PageDep, request: Request, api_key_digest: ApiKeyDigestDep
) -> Page[WebhookEndpointOut]:
    async with driver_connection(request) as connection:
        return await reads.list_endpoints(
            connection, api_key_digest, limit=page.limit, starting_after=page.starting_after
        )


@router.get(
    "/endpoints/{endpoint_id}",
    response_model=WebhookEndpointOut,
    summary="One webhook endpoint (never its secret)",
    description="Its URL, event types, whether it is enabled, and when its previous secret stops signing.",
    responses=problems(KEYED, VALIDATION, ENDPOINT_NOT_FOUND),
)
async def get_endpoint(
    endpoint_id: EndpointId, request: Request, api_key_digest: ApiKeyDigestDep
) -> WebhookEndpointOut:
    async with driver_connection(request) as connection:
        return await reads.get_endpoint(connection, api_key_digest, endpoint_id)


@router.patch(
    "/endpoints/{endpoint_id}",
    response_model=WebhookEndpointOut,
    summary="Change an endpoint's URL, event types or description, or disable / enable it",
    description="A disabled endpoint gets no deliveries for new events and sends none; enabled again, its "
    "pending deliveries resume in order.",
    responses=problems(KEYED, JSON_BODY, IDEMPOTENT, ENDPOINT_NOT_FOUND, UNSAFE_WEBHOOK_URL),
)
async def update_endpoint(
    endpoint_id: EndpointId, body: WebhookEndpointUpdate, runtime: RuntimeDep, write: KeyedWriteDep
) -> WebhookEndpointOut:
    change = webhooks.EndpointChange(
        url=body.url,
        event_types=body.event_types,
        description=body.description,
        enabled=body.enabled,
        removes_description="description" in body.model_fields_set and body.description is None,
    )
    policy = webhooks.DeliveryPolicy.from_settings(runtime.settings)

    async def work(opened: Transaction) -> WebhookEndpointOut:
        return await webhooks.update_endpoint(opened, policy, utc_now(), endpoint_id, change)

    return await write(WebhookEndpointOut, work, status=200)


@router.delete(
    "/endpoints/{endpoint_id}",
    response_model=WebhookEndpointDeletedOut,
    summary="Delete an endpoint and its deliveries",
    description="Nothing more is sent to it, including deliveries still pending; the events stay recorded.",
    responses=problems(KEYED, IDEMPOTENT, ENDPOINT_NOT_FOUND),
)
async def delete_endpoint(endpoint_id: EndpointId, write: KeyedWriteDep) -> WebhookEndpointDeletedOut:
    async def work(opened: Transaction) -> WebhookEndpointDeletedOut:
        return await webhooks.delete_endpoint(opened, endpoint_id)

    return await write(WebhookEndpointDeletedOut, work, status=200)


@router.post(
    "/endpoints/{endpoint_id}/rotate-secret",
    response_model=WebhookEndpointSecretOut,
    summary="Rotate the signing secret; the previous one keeps signing for an overlap",
    description="The new secret is in this answer only. The secret it replaces keeps signing until "
    "`previous_secret_expires_at` (a second signature in every message), so receivers can switch without "
    "missing one; a secret an earlier rotation retired keeps signing until the end that rotation promised. "
    f"At most {MAX_LIVE_SECRETS} secrets sign at once: one rotation more within the overlap is refused "
    "(409, with when to rotate again).",
    responses=problems(KEYED, IDEMPOTENT, ENDPOINT_NOT_FOUND, SECRET_ROTATION_LIMIT),
)
async def rotate_secret(
    endpoint_id: EndpointId, runtime: RuntimeDep, write: KeyedWriteDep
) -> WebhookEndpointSecretOut:
    policy = webhooks.DeliveryPolicy.from_settings(runtime.settings)

    async def work(opened: Transaction) -> WebhookEndpointSecretOut:
        return await webhooks.rotate_secret(opened, runtime.keys.seed_key, policy, utc_now(), endpoint_id)

    return await write(WebhookEndpointSecretOut, work, status=200)


@router.get(
    "/endpoints/{endpoint_id}/deliveries",
    response_model=Page[WebhookDeliveryOut],
    summary="An endpoint's deliveries, newest first: status, attempts, last status code and timing",
    description="One delivery per event sent to this endpoint: `pending` (waiting for its next attempt), `delivered` "
    "or `failed` (retries exhausted); the receiver's answer is never shown beyond its status code.",
    responses=problems(KEYED, VALIDATION, ENDPOINT_NOT_FOUND, BAD_CURSOR),
)
async def list_deliveries(
    endpoint_id: EndpointId,
    page: PageDep,
    request: Request,
    api_key_digest: ApiKeyDigestDep,
    status: Annotated[DeliveryStatus | None, Query(description="Only deliveries in this status.")] = None,
) -> Page[WebhookDeliveryOut]:
    async with driver_connection(request) as connection:
        return await reads.list_deliveries(
            connection,
            api_key_digest,
            endpoint_id,
            status=status,
            limit=page.limit,
            starting_after=page.starting_after,
        )


@router.post(
    "/endpoints/{endpoint_id}/deliveries/{delivery_id}/retry",
    response_model=WebhookDeliveryOut,
    summary="Try a delivery once more, now (a failed one, or a delivered one to send it again)",
    description="The delivery becomes pending with its next attempt due now; the worker sends it with the same "
    "`webhook-id`.",
    responses=problems(KEYED, IDEMPOTENT, ENDPOINT_NOT_FOUND, DELIVERY_NOT_FOUND, DELIVERY_IN_FLIGHT),
)
async def retry_delivery(
    endpoint_id: EndpointId, delivery_id: DeliveryId, write: KeyedWriteDep
) -> WebhookDeliveryOut:
    async def work(opened: Transaction) -> WebhookDeliveryOut:
        return await webhooks.retry_delivery(opened, utc_now(), endpoint_id, delivery_id)

    return await write(WebhookDeliveryOut, work, status=200)
