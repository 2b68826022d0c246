"""A tenant has at most MAX_ENDPOINTS webhook endpoints (every event fans out to each): one more is a 409
naming the limit that writes nothing, a deleted one frees its place, and creations racing for the last
places cannot pass it together (they count under a lock of the tenant's creations)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from psycopg import AsyncConnection
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models import WebhookEndpoint
from pokna.db.types import utc_now
from pokna.idempotency.keyed import Caller, transaction
from pokna.outbox.events import EventType
from pokna.runtime import Runtime
from pokna.settings import Settings
from pokna.webhooks.errors import EndpointLimitReached
from pokna.webhooks.policy import MAX_ENDPOINTS
from pokna.webhooks.service import DeliveryPolicy, NewEndpoint, create_endpoint
from support.api_checks import assert_problem, database_state
from support.driver import conninfo, create_tenant
from support.tenant_api import new_tenant

DOCS = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"
ENDPOINTS = "/v1/webhooks/endpoints"
URL = "http://127.0.0.1:9/hooks"
HOOK = {"url": URL, "event_types": ["game.turn"]}


def _endpoints(sessions: sessionmaker[Session], tenant_id: str) -> int:
    with sessions() as session:
        counted = (
            select(func.count()).select_from(WebhookEndpoint).where(WebhookEndpoint.tenant_id == tenant_id)
        )
        return int(session.scalar(counted) or 0)


def test_one_more_than_the_limit_is_refused_until_one_is_deleted(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    tenant = new_tenant(client, sessions)
    made = [tenant.post(ENDPOINTS, HOOK) for _ in range(MAX_ENDPOINTS)]
    assert [answer.status_code for answer in made] == [201] * MAX_ENDPOINTS
    first = f"{ENDPOINTS}/{made[0].json()['id']}"
    disabled = client.patch(first, json={"enabled": False}, headers=tenant.headers)
    assert disabled.status_code == 200, disabled.text  # a disabled endpoint keeps its place

    before = database_state(sessions)
    keyed = {"Idempotency-Key": "hook-one-more"}
    problem = assert_problem(
        tenant.post(ENDPOINTS, HOOK, headers=keyed), 409, "webhook_endpoint_limit_reached"
    )
    assert problem["limit"] == MAX_ENDPOINTS
    assert str(MAX_ENDPOINTS) in problem["detail"]
    assert database_state(sessions) == before  # no endpoint, and the key not spent

    deleted = client.delete(first, headers=tenant.headers)
    assert deleted.status_code == 200, deleted.text
    again = tenant.post(ENDPOINTS, HOOK, headers=keyed)
    assert again.status_code == 201, again.text
    assert _endpoints(sessions, tenant.tenant_id) == MAX_ENDPOINTS
    assert_problem(tenant.post(ENDPOINTS, HOOK), 409, "webhook_endpoint_limit_reached")
    other = new_tenant(client, sessions, "Other")  # the limit is each tenant's own
    assert other.post(ENDPOINTS, HOOK).status_code == 201


@pytest.mark.citus
def test_a_burst_of_creations_for_the_last_places_ends_at_the_limit(
    settings: Settings, runtime: Runtime, sessions: sessionmaker[Session]
) -> None:
    """Eight creations at once, each on a connection of its own, with four places left: four are made
    and four refused, whatever their order."""
    tenant_id = create_tenant(sessions, "Burst").id
    policy = DeliveryPolicy.from_settings(settings)
    draft = NewEndpoint(url=URL, event_types=[EventType.GAME_TURN])
    place = conninfo(sessions)

    async def made(connection: AsyncConnection[Any]) -> str:
        async with transaction(connection, Caller(tenant_id=tenant_id), None) as opened:
            created = await create_endpoint(opened, runtime.keys.seed_key, policy, utc_now(), draft)
        return created.id

    async def one() -> str | Exception:
        async with await AsyncConnection.connect(place, autocommit=True) as connection:
            try:
                return await made(connection)
            except EndpointLimitReached as refusal:
                return refusal

    async def creations(count: int) -> list[str | Exception]:
        return list(await asyncio.gather(*(one() for _ in range(count))))

    assert all(isinstance(made_id, str) for made_id in asyncio.run(creations(MAX_ENDPOINTS - 4)))
    burst = asyncio.run(creations(8))
    assert sum(isinstance(answer, str) for answer in burst) == 4
    assert sum(isinstance(answer, EndpointLimitReached) for answer in burst) == 4
    assert _endpoints(sessions, tenant_id) == MAX_ENDPOINTS


def test_the_docs_state_the_limit() -> None:
    assert f"at most {MAX_ENDPOINTS} endpoints" in " ".join(DOCS.read_text().split())
