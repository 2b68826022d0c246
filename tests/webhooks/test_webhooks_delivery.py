"""Delivery to real receivers on 127.0.0.1, on both backends: every committed event arrives, signed (checked
by the standardwebhooks package), in order per game, through receivers that fail in every way a network
can; and a delivery that never succeeds ends failed, visible, and can be retried."""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from pokna.db.types import utc_now
from pokna.outbox import EVENT_TYPES
from pokna.runtime import Runtime
from pokna.webhooks.attempts import claim_next, record_result
from pokna.webhooks.dispatch import dispatch_events
from pokna.webhooks.pinning import new_client
from pokna.webhooks.policy import DeliveryPolicy
from pokna.webhooks.schemas import DeliveryStatus
from pokna.webhooks.sending import send
from support.game_play import Api, play
from support.tenant_api import TenantApi, new_tenant
from support.webhook_receiver import Failure, Receiver, running_receiver
from support.webhook_worker import drain, fast_webhook_settings, recorded_events

__all__ = ["fast_webhook_settings"]  # the `settings` fixture of this module: retries in milliseconds

ROOT = Path(__file__).resolve().parents[2]
GAME_EVENTS = [event_type for event_type in EVENT_TYPES if event_type.startswith("game.")]


def subscribe(tenant: TenantApi, url: str, event_types: list[str] | None = None) -> dict[str, Any]:
    created = tenant.post(
        "/v1/webhooks/endpoints", {"url": url, "event_types": event_types or list(EVENT_TYPES)}
    )
    assert created.status_code == 201, created.text
    endpoint: dict[str, Any] = created.json()
    return endpoint


def play_one_game(tenant: TenantApi, players: int = 2) -> str:
    api = Api(tenant.client, tenant.api_key)
    vigo = api.wallet(100)
    seats = [api.wallet(100) for _ in range(players)]
    game = play([api], api.create_game(vigo, seats, stake=5))
    game_id: str = game["id"]
    return game_id


def assert_in_order_per_key(receiver: Receiver, recorded: list[dict[str, Any]]) -> None:
    """The first successful arrival of each message, per game (or wallet), follows the outbox's order."""
    expected: dict[str, list[str]] = defaultdict(list)
    for event in recorded:
        expected[event["key"]].append(event["id"])
    arrived: dict[str, list[str]] = defaultdict(list)
    key_of = {event["id"]: event["key"] for event in recorded}
    for request in receiver.delivered():
        arrived[key_of[request.message_id]].append(request.message_id)
    assert arrived == expected


@pytest.mark.citus
def test_a_played_game_and_its_money_arrive_signed_complete_and_in_order(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    tenant = new_tenant(client, sessions)
    with running_receiver() as receiver:
        endpoint = subscribe(tenant, receiver.url)
        game_id = play_one_game(tenant)
        wallet = tenant.wallet(50)
        assert tenant.withdraw(wallet, 20).status_code == 201
        report = drain(runtime)
        recorded = recorded_events(sessions, tenant.tenant_id)

        arrived = receiver.delivered()
        assert [request.message_id for request in arrived] == [event["id"] for event in recorded]
        assert report.delivered == len(recorded)
        assert report.failed == 0
        receiver.verify_all(endpoint["secret"])
        with pytest.raises(Exception, match="signature"):
            Webhook("whsec_" + "A" * 32).verify(arrived[0].body, arrived[0].headers)
        assert_in_order_per_key(receiver, recorded)

    types = [request.event["type"] for request in arrived if request.event["data"].get("game_id") == game_id]
    assert types[:3] == ["game.created", "game.turn", "game.started"]
    assert types[-1] == "game.settled"
    assert "game.turn" in types[3:]
    settled = arrived[[r.event["type"] for r in arrived].index("game.settled")].event["data"]
    assert settled["public_url"].startswith("/v1/fairness/proofs/")
    outcome = tenant.get(f"/v1/games/{game_id}").json()["outcome"]
    assert (settled["reason"], settled["payouts"]) == (outcome["reason"], outcome["payouts"])
    money = [r.event for r in arrived if r.event["type"].startswith("ledger.")]
    assert money[-2]["data"] | {"account_id": wallet} == money[-2]["data"]
    assert (money[-2]["type"], money[-2]["data"]["amount"], money[-2]["data"]["balance"]) == (
        "ledger.deposit.posted", 50, 50)  # fmt: skip
    assert (money[-1]["type"], money[-1]["data"]["amount"], money[-1]["data"]["balance"]) == (
        "ledger.withdrawal.posted", 20, 30)  # fmt: skip


@pytest.mark.parametrize("failure", ["status", "slow", "reset"])
def test_a_receiver_failing_the_first_attempts_gets_everything_with_the_same_ids(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, failure: Failure
) -> None:
    tenant = new_tenant(client, sessions)
    with running_receiver(fail_first=3, failure=failure) as receiver:
        endpoint = subscribe(tenant, receiver.url, GAME_EVENTS)
        play_one_game(tenant)
        report = drain(runtime)
        recorded = recorded_events(sessions, tenant.tenant_id)
        games = [event for event in recorded if event["type"].startswith("game.")]

        assert [request.message_id for request in receiver.delivered()] == [event["id"] for event in games]
        first = games[0]["id"]
        receiver.wait_idle()
        assert [request.message_id for request in receiver.requests()[:4]] == [first] * 4
        assert len(receiver.received) == len(games) + 3
        assert (report.attempts, report.retries_scheduled, report.delivered) == (
            len(games) + 3,
            3,
            len(games),
        )
        print(f"\n{failure}: {len(games)} events, {report}")
        receiver.verify_all(endpoint["secret"])

    deliveries = tenant.get(f"/v1/webhooks/endpoints/{endpoint['id']}/deliveries", params={"limit": 100})
    by_message = {delivery["message_id"]: delivery for delivery in deliveries.json()["data"]}
    assert by_message[first]["attempts"] == 4
    assert (by_message[first]["status"], by_message[first]["last_status_code"]) == ("delivered", 200)
    assert {delivery["attempts"] for message, delivery in by_message.items() if message != first} == {1}


def test_a_redirect_is_a_failed_attempt_and_never_followed(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    tenant = new_tenant(client, sessions)
    with running_receiver(fail_first=1, failure="redirect") as receiver, running_receiver() as elsewhere:
        receiver.redirect_to = elsewhere.url
        endpoint = subscribe(tenant, receiver.url, ["ledger.deposit.posted"])
        tenant.wallet(10)
        drain(runtime)
        assert [request.answered for request in receiver.requests()] == [307, 200]
        assert elsewhere.arrivals == 0
    [delivery] = tenant.get(f"/v1/webhooks/endpoints/{endpoint['id']}/deliveries").json()["data"]
    assert (delivery["attempts"], delivery["status"]) == (2, "delivered")


def test_a_delivery_that_never_succeeds_is_failed_visible_and_can_be_retried(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    tenant = new_tenant(client, sessions)
    with running_receiver(fail_first=1000) as receiver:
        endpoint = subscribe(tenant, receiver.url, ["ledger.deposit.posted"])
        tenant.wallet(10)
        report = drain(runtime)
        assert (report.attempts, report.failed) == (6, 1)  # the attempt limit of these tests
        path = f"/v1/webhooks/endpoints/{endpoint['id']}/deliveries"
        failed = tenant.get(path, params={"status": "failed"})
        assert failed.status_code == 200
        [delivery] = failed.json()["data"]
        assert (delivery["attempts"], delivery["last_status_code"], delivery["last_error"]) == (
            6,
            503,
            "http_status",
        )
        assert delivery["next_attempt_at"] is None
        assert "never shown" not in failed.text

        receiver.fail_first = 0
        retried = tenant.post(f"{path}/{delivery['id']}/retry")
        assert retried.status_code == 200, retried.text
        assert (retried.json()["status"], retried.json()["attempt_limit"]) == ("pending", 7)
        assert drain(runtime).delivered == 1
        [arrived] = receiver.delivered()
        assert arrived.message_id == delivery["message_id"]
        assert {request.message_id for request in receiver.received} == {delivery["message_id"]}
    assert tenant.get(path).json()["data"][0]["status"] == "delivered"


def test_a_pending_delivery_retried_by_hand_keeps_the_rest_of_its_retries(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    """Hurrying a delivery that waits out its backoff sends it now and keeps its schedule: the retry once set
    the limit to one more attempt whatever the state, so one more failure ended it `failed`, the 4 attempts
    it had left lost."""
    tenant = new_tenant(client, sessions)
    with running_receiver(fail_first=1000) as receiver:
        endpoint = subscribe(tenant, receiver.url, ["ledger.deposit.posted"])
        tenant.wallet(10)
        waiting = replace(DeliveryPolicy.from_settings(runtime.settings), backoff_initial_seconds=3600)
        assert asyncio.run(one_attempt(runtime, waiting)) is DeliveryStatus.PENDING
        path = f"/v1/webhooks/endpoints/{endpoint['id']}/deliveries"
        [delivery] = tenant.get(path).json()["data"]
        assert (delivery["status"], delivery["attempts"], delivery["attempt_limit"]) == ("pending", 1, 6)

        retried = tenant.post(f"{path}/{delivery['id']}/retry")
        assert retried.status_code == 200, retried.text
        assert (retried.json()["status"], retried.json()["attempt_limit"]) == ("pending", 6)
        report = drain(runtime)
        assert (report.attempts, report.failed) == (5, 1)
        assert len(receiver.requests()) == 6


async def one_attempt(runtime: Runtime, policy: DeliveryPolicy) -> DeliveryStatus | None:
    """The worker's steps for one attempt, under `policy`: fan out, claim, send, record."""
    client = new_client()
    try:
        async with runtime.aio.connection() as connection:
            await dispatch_events(connection, policy, utc_now())
            claim = await claim_next(connection, runtime.keys.seed_key, policy, utc_now())
        assert claim is not None
        result = await send(client, policy, claim)
        async with runtime.aio.connection() as connection:
            return await record_result(connection, policy, utc_now(), claim, result)
    finally:
        await client.close()


def test_the_documented_receiver_verifies_a_real_message(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    """The few lines of README's "Integrating" and docs/webhooks.md, run on what a receiver got."""
    tenant = new_tenant(client, sessions)
    with running_receiver() as receiver:
        endpoint = subscribe(tenant, receiver.url, ["ledger.deposit.posted"])
        tenant.wallet(10)
        drain(runtime)
        [arrived] = receiver.delivered()
    for document in (ROOT / "README.md", ROOT / "docs" / "webhooks.md"):
        [snippet] = re.findall(r"```python\n(.*?)```", document.read_text(), flags=re.DOTALL)
        namespace: dict[str, Any] = {}
        exec(snippet, namespace)
        assert namespace["receive"](arrived.body, arrived.headers, endpoint["secret"]) == arrived.event
        with pytest.raises(WebhookVerificationError):
            namespace["receive"](arrived.body + b" ", arrived.headers, endpoint["secret"])


def test_a_disabled_endpoint_gets_nothing_until_enabled_and_a_deleted_one_nothing_at_all(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    tenant = new_tenant(client, sessions)
    with running_receiver() as kept, running_receiver() as deleted:
        endpoint = subscribe(tenant, kept.url, ["ledger.deposit.posted"])
        gone = subscribe(tenant, deleted.url, ["ledger.deposit.posted"])
        path = f"/v1/webhooks/endpoints/{endpoint['id']}"
        assert tenant.client.patch(path, json={"enabled": False}, headers=tenant.headers).status_code == 200
        assert tenant.client.delete(f"/v1/webhooks/endpoints/{gone['id']}", headers=tenant.headers).json()[
            "deleted"
        ]
        tenant.wallet(10)
        drain(runtime)
        assert kept.received == []
        assert deleted.received == []

        assert tenant.client.patch(path, json={"enabled": True}, headers=tenant.headers).status_code == 200
        tenant.wallet(20)
        drain(runtime)
        assert [request.event["data"]["amount"] for request in kept.delivered()] == [20]
        assert deleted.received == []


def test_after_a_rotation_both_secrets_verify_until_the_overlap_ends(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    tenant = new_tenant(client, sessions)
    with running_receiver() as receiver:
        endpoint = subscribe(tenant, receiver.url, ["ledger.deposit.posted"])
        rotated = tenant.post(f"/v1/webhooks/endpoints/{endpoint['id']}/rotate-secret")
        assert rotated.status_code == 200, rotated.text
        new_secret = rotated.json()["secret"]
        assert new_secret.startswith("whsec_")
        assert new_secret != endpoint["secret"]
        assert rotated.json()["previous_secret_expires_at"] is not None
        tenant.wallet(10)
        drain(runtime)
        [arrived] = receiver.delivered()
        assert len(arrived.headers["webhook-signature"].split(" ")) == 2
        Webhook(new_secret).verify(arrived.body, arrived.headers)
        Webhook(endpoint["secret"]).verify(arrived.body, arrived.headers)
