"""Webhook endpoints over REST: the tenant makes, lists, changes, deletes and rotates them, and looks at
and retries their deliveries. Thin: parse, call pokna.webhooks.service, answer its model."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session

from pokna.api.auth import TenantDep
from pokna.api.deps import RuntimeDep, SessionDep
from pokna.api.idempotency import IdempotencyDep
from pokna.api.pagination import Page, PageDep
from pokna.api.problems import problem_responses
from pokna.api.schemas.common import NoNul
from pokna.api.schemas.webhooks import WebhookEndpointCreate, WebhookEndpointUpdate
from pokna.db.types import utc_now
from pokna.webhooks import service as webhooks
from pokna.webhooks.schemas import (
    DeliveryStatus,
    WebhookDeliveryOut,
    WebhookEndpointDeletedOut,
    WebhookEndpointOut,
    WebhookEndpointSecretOut,
)

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])

EndpointId = Annotated[str, Path(max_length=40, description="The endpoint's id (`whep_...`)."), NoNul]
DeliveryId = Annotated[str, Path(max_length=40, description="The delivery's id (`whdl_...`)."), NoNul]


@router.post(
    "/endpoints",
    status_code=201,
    response_model=WebhookEndpointSecretOut,
    summary="Create a webhook endpoint; its signing secret is in this answer only",
    description="Events of the chosen types are POSTed to the URL, signed per Standard Webhooks "
    "(`webhook-id`, `webhook-timestamp`, `webhook-signature`). Keep the `secret`: it is never shown again.",
    responses=problem_responses(401, 409, 422),
)
def create_endpoint(
    body: WebhookEndpointCreate, runtime: RuntimeDep, tenant_id: TenantDep, idempotency: IdempotencyDep
) -> JSONResponse:
    draft = webhooks.NewEndpoint(url=body.url, event_types=body.event_types, description=body.description)
    policy = webhooks.DeliveryPolicy.from_settings(runtime.settings)

    def work(session: Session) -> tuple[int, WebhookEndpointSecretOut]:
        seed_key = runtime.keys.seed_key
        return 201, webhooks.create_endpoint(session, seed_key, policy, utc_now(), tenant_id, draft)

    return idempotency.run(work)


@router.get(
    "/endpoints",
    response_model=Page[WebhookEndpointOut],
    summary="The tenant's webhook endpoints",
    responses=problem_responses(401, 422),
)
def list_endpoints(page: PageDep, tenant_id: TenantDep, session: SessionDep) -> Page[WebhookEndpointOut]:
    return webhooks.list_endpoints(session, tenant_id, limit=page.limit, starting_after=page.starting_after)


@router.get(
    "/endpoints/{endpoint_id}",
    response_model=WebhookEndpointOut,
    summary="One webhook endpoint (never its secret)",
    responses=problem_responses(401, 404),
)
def get_endpoint(endpoint_id: EndpointId, tenant_id: TenantDep, session: SessionDep) -> WebhookEndpointOut:
    return webhooks.get_endpoint(session, tenant_id, endpoint_id)


@router.patch(
    "/endpoints/{endpoint_id}",
    response_model=WebhookEndpointOut,
    summary="Change an endpoint's URL, event types or description, or disable / enable it",
    description="A disabled endpoint gets no deliveries for new events and sends none; enabled again, its "
    "pending deliveries resume in order.",
    responses=problem_responses(401, 404, 409, 422),
)
def update_endpoint(
    endpoint_id: EndpointId,
    body: WebhookEndpointUpdate,
    runtime: RuntimeDep,
    tenant_id: TenantDep,
    idempotency: IdempotencyDep,
) -> JSONResponse:
    change = webhooks.EndpointChange(
        url=body.url, event_types=body.event_types, description=body.description, enabled=body.enabled
    )
    policy = webhooks.DeliveryPolicy.from_settings(runtime.settings)

    def work(session: Session) -> tuple[int, WebhookEndpointOut]:
        return 200, webhooks.update_endpoint(session, policy, utc_now(), tenant_id, endpoint_id, change)

    return idempotency.run(work)


@router.delete(
    "/endpoints/{endpoint_id}",
    response_model=WebhookEndpointDeletedOut,
    summary="Delete an endpoint and its deliveries",
    responses=problem_responses(401, 404, 409, 422),
)
def delete_endpoint(
    endpoint_id: EndpointId, tenant_id: TenantDep, idempotency: IdempotencyDep
) -> JSONResponse:
    def work(session: Session) -> tuple[int, WebhookEndpointDeletedOut]:
        return 200, webhooks.delete_endpoint(session, tenant_id, endpoint_id)

    return idempotency.run(work)


@router.post(
    "/endpoints/{endpoint_id}/rotate-secret",
    response_model=WebhookEndpointSecretOut,
    summary="Rotate the signing secret; the previous one keeps signing for an overlap",
    description="The new secret is in this answer only. Until `previous_secret_expires_at` every message "
    "carries two signatures (new and previous), so receivers can switch without missing one.",
    responses=problem_responses(401, 404, 409, 422),
)
def rotate_secret(
    endpoint_id: EndpointId, runtime: RuntimeDep, tenant_id: TenantDep, idempotency: IdempotencyDep
) -> JSONResponse:
    policy = webhooks.DeliveryPolicy.from_settings(runtime.settings)

    def work(session: Session) -> tuple[int, WebhookEndpointSecretOut]:
        seed_key = runtime.keys.seed_key
        return 200, webhooks.rotate_secret(session, seed_key, policy, utc_now(), tenant_id, endpoint_id)

    return idempotency.run(work)


@router.get(
    "/endpoints/{endpoint_id}/deliveries",
    response_model=Page[WebhookDeliveryOut],
    summary="An endpoint's deliveries, newest first: status, attempts, last status code and timing",
    responses=problem_responses(401, 404, 422),
)
def list_deliveries(
    endpoint_id: EndpointId,
    page: PageDep,
    tenant_id: TenantDep,
    session: SessionDep,
    status: Annotated[DeliveryStatus | None, Query(description="Only deliveries in this status.")] = None,
) -> Page[WebhookDeliveryOut]:
    return webhooks.list_deliveries(
        session, tenant_id, endpoint_id, status=status, limit=page.limit, starting_after=page.starting_after
    )


@router.post(
    "/endpoints/{endpoint_id}/deliveries/{delivery_id}/retry",
    response_model=WebhookDeliveryOut,
    summary="Try a delivery once more, now (a failed one, or a delivered one to send it again)",
    responses=problem_responses(401, 404, 409, 422),
)
def retry_delivery(
    endpoint_id: EndpointId, delivery_id: DeliveryId, tenant_id: TenantDep, idempotency: IdempotencyDep
) -> JSONResponse:
    def work(session: Session) -> tuple[int, WebhookDeliveryOut]:
        return 200, webhooks.retry_delivery(session, utc_now(), tenant_id, endpoint_id, delivery_id)

    return idempotency.run(work)
