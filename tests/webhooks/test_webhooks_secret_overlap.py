"""Rotating a secret again within the overlap keeps every earlier secret signing until its own promised
end: each rotation told the receiver a day (`POKNA_WEBHOOK_SECRET_OVERLAP_SECONDS`), and a second rotation
must not take that back. A real receiver on 127.0.0.1 gets the message (on both backends); the standardwebhooks package
verifies it with each secret still promised. The number of secrets signing at once is bounded: one
rotation too many is a 409 that says until when."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from psycopg import AsyncConnection
from sqlalchemy.orm import Session, sessionmaker
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from pokna.db.types import utc_now
from pokna.idempotency.keyed import Caller, transaction
from pokna.outbox.events import EventType
from pokna.runtime import Runtime
from pokna.settings import Settings
from pokna.webhooks.attempts import claim_next
from pokna.webhooks.dispatch import dispatch_events
from pokna.webhooks.errors import SecretRotationLimit
from pokna.webhooks.policy import MAX_LIVE_SECRETS, DeliveryPolicy
from pokna.webhooks.service import NewEndpoint, create_endpoint, rotate_secret
from pokna.webhooks.signing import open_secret
from support.api_checks import assert_problem
from support.driver import conninfo, create_tenant
from support.tenant_api import new_tenant
from support.webhook_receiver import running_receiver
from support.webhook_worker import drain, fast_webhook_settings

__all__ = ["fast_webhook_settings"]

ENDPOINTS = "/v1/webhooks/endpoints"


@pytest.mark.citus
def test_every_secret_still_promised_verifies_after_rotations_within_the_overlap(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    tenant = new_tenant(client, sessions)
    with running_receiver() as receiver:
        made = tenant.post(ENDPOINTS, {"url": receiver.url, "event_types": ["ledger.deposit.posted"]})
        assert made.status_code == 201, made.text
        path = f"{ENDPOINTS}/{made.json()['id']}"
        secrets, promised_until = [made.json()["secret"]], []
        for _ in range(2):
            rotated = tenant.post(f"{path}/rotate-secret")
            assert rotated.status_code == 200, rotated.text
            secrets.append(rotated.json()["secret"])
            promised_until.append(rotated.json()["previous_secret_expires_at"])
        assert len(set(secrets)) == 3
        assert tenant.get(path).json()["previous_secret_expires_at"] == promised_until[-1]

        tenant.wallet(10)
        drain(runtime)
        [arrived] = receiver.delivered()
    assert len(arrived.headers["webhook-signature"].split(" ")) == 3
    for secret in secrets:  # the first one too: its day is not over
        assert Webhook(secret).verify(arrived.body, arrived.headers) == arrived.event
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "A" * 32).verify(arrived.body, arrived.headers)


def test_one_rotation_too_many_within_the_overlap_is_refused_and_says_until_when(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    tenant = new_tenant(client, sessions)
    made = tenant.post(ENDPOINTS, {"url": "http://127.0.0.1:9/hooks", "event_types": ["game.turn"]})
    path = f"{ENDPOINTS}/{made.json()['id']}"
    first_promise = None
    for rotation in range(MAX_LIVE_SECRETS - 1):
        rotated = tenant.post(f"{path}/rotate-secret")
        assert rotated.status_code == 200, rotated.text
        if rotation == 0:
            first_promise = rotated.json()["previous_secret_expires_at"]
    problem = assert_problem(tenant.post(f"{path}/rotate-secret"), 409, "webhook_secret_rotation_limit")
    assert problem["limit"] == MAX_LIVE_SECRETS
    assert problem["rotate_again_after"] == first_promise
    assert str(MAX_LIVE_SECRETS) in problem["detail"]


def test_a_secret_stops_signing_at_its_own_promised_end(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    """The claim's live secrets at moments chosen by the test: the earliest secret leaves first."""
    tenant = new_tenant(client, sessions)
    made = tenant.post(
        ENDPOINTS, {"url": "http://127.0.0.1:9/hooks", "event_types": ["ledger.deposit.posted"]}
    )
    path = f"{ENDPOINTS}/{made.json()['id']}"
    secrets, ends = [made.json()["secret"]], []
    for _ in range(2):
        rotated = tenant.post(f"{path}/rotate-secret").json()
        secrets.append(rotated["secret"])
        ends.append(datetime.fromisoformat(rotated["previous_secret_expires_at"].replace("Z", "+00:00")))
    tenant.wallet(10)
    policy = DeliveryPolicy.from_settings(runtime.settings)

    async def live_at(moment: datetime) -> tuple[str, ...]:
        async with runtime.aio.connection() as connection:
            await dispatch_events(connection, policy, utc_now())
            # Rolled back: the claim is not kept, and the next look finds the delivery due again.
            async with connection.transaction(force_rollback=True):
                claim = await claim_next(
                    connection, runtime.keys.seed_key, policy, moment, [tenant.tenant_id]
                )
        assert claim is not None
        return claim.live_secrets

    newest_first = tuple(reversed(secrets))
    assert asyncio.run(live_at(ends[0] - timedelta(seconds=1))) == newest_first
    assert asyncio.run(live_at(ends[0])) == newest_first[:2]
    assert asyncio.run(live_at(ends[1])) == newest_first[:1]


@pytest.mark.citus
def test_rotations_at_once_each_keep_the_secret_they_replace(
    settings: Settings, runtime: Runtime, sessions: sessionmaker[Session]
) -> None:
    """Six rotations of one endpoint at once, each on a connection of its own: each waits for the
    endpoint's lock and reads the secrets the one before it left, so three are made (each secret they
    replaced still signing) and three refused, whatever their order; none overwrites another's."""
    tenant_id = create_tenant(sessions, "Rotations").id
    policy = DeliveryPolicy.from_settings(settings)
    place = conninfo(sessions)

    async def opened() -> Any:
        return await AsyncConnection.connect(place, autocommit=True)

    async def made() -> tuple[str, str]:
        caller = Caller(tenant_id=tenant_id)
        async with await opened() as connection, transaction(connection, caller, None) as keyed:
            draft = NewEndpoint(url="http://127.0.0.1:9/hooks", event_types=[EventType.GAME_TURN])
            created = await create_endpoint(keyed, runtime.keys.seed_key, policy, utc_now(), draft)
        return created.id, created.secret

    async def one(endpoint_id: str) -> str | Exception:
        async with await opened() as connection:
            try:
                async with transaction(connection, Caller(tenant_id=tenant_id), None) as keyed:
                    rotated = await rotate_secret(
                        keyed, runtime.keys.seed_key, policy, utc_now(), endpoint_id
                    )
                return rotated.secret
            except SecretRotationLimit as refusal:
                return refusal

    async def rotations(endpoint_id: str) -> list[str | Exception]:
        return list(await asyncio.gather(*(one(endpoint_id) for _ in range(6))))

    endpoint_id, first = asyncio.run(made())
    answers = asyncio.run(rotations(endpoint_id))
    secrets = [answer for answer in answers if isinstance(answer, str)]
    assert len(secrets) == MAX_LIVE_SECRETS - 1
    assert sum(isinstance(answer, SecretRotationLimit) for answer in answers) == 3

    async def live() -> set[str]:
        async with runtime.aio.connection() as connection:
            row = await (
                await connection.execute(
                    "SELECT sealed_secret, sealed_previous_secrets FROM webhook_endpoint "
                    "WHERE tenant_id = %(tenant)s AND id = %(id)s",
                    {"tenant": tenant_id, "id": endpoint_id},
                )
            ).fetchone()
        assert row is not None
        return {open_secret(sealed, runtime.keys.seed_key, endpoint_id) for sealed in [row[0], *row[1]]}

    assert asyncio.run(live()) == {first, *secrets}  # every secret made signs: none was overwritten
