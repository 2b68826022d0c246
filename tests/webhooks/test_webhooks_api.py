"""Managing webhook endpoints over REST, on both backends: the secret shown once, tenants kept apart, bad
input answered as problem+json naming the field, and the production URL rules (https, public addresses)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, update
from sqlalchemy.orm import Session, sessionmaker

from pokna.app import create_app
from pokna.db.models.webhook import WebhookDelivery
from pokna.db.types import utc_now
from pokna.outbox.events import EventType
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from pokna_verify.crypto.signing import generate_signing_key, private_key_to_pem
from support.api_checks import assert_names_field, assert_problem, database_state
from support.tenant_api import TenantApi, new_tenant
from support.webhook_worker import fan_out

ENDPOINTS = "/v1/webhooks/endpoints"


def create(tenant: TenantApi, headers: dict[str, str] | None = None, **body: Any) -> Any:
    body = {"url": "http://127.0.0.1:9/hooks", "event_types": ["game.turn"], **body}
    return tenant.post(ENDPOINTS, body, headers=headers or {})


def test_an_endpoint_is_made_listed_changed_rotated_and_deleted(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    tenant = new_tenant(client, sessions)
    made = create(tenant, event_types=["game.turn", "game.settled", "game.turn"], description="lobby")
    assert made.status_code == 201, made.text
    endpoint = made.json()
    assert endpoint["secret"].startswith("whsec_")
    assert (endpoint["event_types"], endpoint["enabled"]) == (["game.settled", "game.turn"], True)
    path = f"{ENDPOINTS}/{endpoint['id']}"

    shown = tenant.get(path).json()
    assert "secret" not in shown
    assert shown == {key: value for key, value in endpoint.items() if key != "secret"}
    second = create(tenant).json()
    first_page = tenant.get(ENDPOINTS, params={"limit": 1}).json()
    rest = tenant.get(ENDPOINTS, params={"limit": 1, "starting_after": first_page["next_cursor"]}).json()
    assert {first_page["data"][0]["id"], rest["data"][0]["id"]} == {endpoint["id"], second["id"]}
    assert (first_page["has_more"], rest["has_more"]) == (True, False)
    assert all("secret" not in item for item in first_page["data"] + rest["data"])

    changed = client.patch(
        path, json={"url": "http://127.0.0.1:9/other", "enabled": False}, headers=tenant.headers
    ).json()
    assert (changed["url"], changed["enabled"], changed["description"]) == (
        "http://127.0.0.1:9/other",
        False,
        "lobby",
    )

    rotated = tenant.post(f"{path}/rotate-secret")
    assert rotated.status_code == 200
    assert rotated.json()["secret"] not in {endpoint["secret"], None}
    assert rotated.json()["previous_secret_expires_at"] is not None

    assert client.delete(path, headers=tenant.headers).json() == {
        "id": endpoint["id"],
        "object": "webhook_endpoint",
        "deleted": True,
    }
    assert_problem(tenant.get(path), 404, "webhook_endpoint_not_found")


def test_a_description_is_removed_by_null_and_other_nulls_change_nothing(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """Only the fields given change: a description given as null is removed (it was answered 200 and kept,
    with no other way to remove one); url, event_types and enabled cannot be null, so theirs change nothing."""
    tenant = new_tenant(client, sessions)
    endpoint = create(tenant, description="lobby").json()
    path = f"{ENDPOINTS}/{endpoint['id']}"
    kept = client.patch(
        path, json={"url": None, "event_types": None, "enabled": None}, headers=tenant.headers
    )
    assert kept.status_code == 200, kept.text
    assert kept.json() == tenant.get(path).json()
    assert (kept.json()["url"], kept.json()["description"]) == (endpoint["url"], "lobby")
    removed = client.patch(path, json={"description": None}, headers=tenant.headers)
    assert removed.status_code == 200, removed.text
    assert removed.json()["description"] is None
    assert tenant.get(path).json()["description"] is None


def test_a_create_retried_with_its_key_answers_the_same_endpoint_and_secret(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    tenant = new_tenant(client, sessions)
    headers = {"Idempotency-Key": "hook-1"}
    first = create(tenant, headers=headers)
    again = create(tenant, headers=headers)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert len(tenant.get(ENDPOINTS).json()["data"]) == 1


def test_tenants_never_see_or_touch_each_others_endpoints(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    owner, other = new_tenant(client, sessions, "Owner"), new_tenant(client, sessions, "Other")
    endpoint = create(owner).json()
    path = f"{ENDPOINTS}/{endpoint['id']}"
    before = database_state(sessions)
    assert_problem(other.get(path), 404, "webhook_endpoint_not_found")
    assert_problem(client.patch(path, json={"enabled": False}, headers=other.headers), 404)
    assert_problem(client.delete(path, headers=other.headers), 404)
    assert_problem(other.post(f"{path}/rotate-secret"), 404)
    assert_problem(other.get(f"{path}/deliveries"), 404)
    assert_problem(other.post(f"{path}/deliveries/whdl_x/retry"), 404, "webhook_endpoint_not_found")
    assert other.get(ENDPOINTS).json()["data"] == []
    assert database_state(sessions)["counts"] == before["counts"]
    assert owner.get(path).json()["enabled"] is True


def test_event_types_named_twice_count_once_toward_the_limit(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """The types are a set (answered sorted, each once): a list of 8 distinct types and a repeat is all
    eight, and nine times one type is that one, on a creation and on a change."""
    tenant = new_tenant(client, sessions)
    every = [event_type.value for event_type in EventType]
    made = create(tenant, event_types=[*every, "game.turn"])
    assert made.status_code == 201, made.text
    assert made.json()["event_types"] == sorted(every)
    path = f"{ENDPOINTS}/{made.json()['id']}"
    changed = client.patch(path, json={"event_types": ["game.settled"] * 9}, headers=tenant.headers)
    assert changed.status_code == 200, changed.text
    assert tenant.get(path).json()["event_types"] == ["game.settled"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.org/hooks", "event_types": ["game.turn"]}, "body.url"),
        ({"url": "http://127.0.0.1:9/h", "event_types": []}, "body.event_types"),
        ({"url": "http://127.0.0.1:9/h", "event_types": ["game.lost"]}, "body.event_types.0"),
        ({"url": "http://127.0.0.1:9/h", "event_types": ["game.turn"], "secret": "mine"}, "body.secret"),
        ({"url": "http://user:pw@127.0.0.1:9/h", "event_types": ["game.turn"]}, "body.url"),
        ({"url": "http://127.0.0.1:99999/h", "event_types": ["game.turn"]}, "body.url"),
        ({"url": "http://127.0.0.1/h\x00", "event_types": ["game.turn"]}, "body.url"),
        ({"url": "http://[::1/h", "event_types": ["game.turn"]}, "body.url"),  # found by schemathesis
        # urlsplit drops tabs and line breaks before judging a URL, but no request line can carry them
        ({"url": "http://127.0.0.1:9/h\r\nX-Injected: 1", "event_types": ["game.turn"]}, "body.url"),
        ({"url": "http://127.0.0.1:9/h\tooks", "event_types": ["game.turn"]}, "body.url"),
        ({"url": "http://127.0.0.1:9/h\x7f", "event_types": ["game.turn"]}, "body.url"),
    ],
)
def test_bad_input_is_a_problem_naming_the_field(
    client: TestClient, sessions: sessionmaker[Session], body: dict[str, Any], field: str
) -> None:
    tenant = new_tenant(client, sessions)
    before = database_state(sessions)
    assert_names_field(assert_problem(tenant.post(ENDPOINTS, body), 422), field)
    assert database_state(sessions)["counts"] == before["counts"]


def test_bad_changes_and_lookups_are_problems_naming_the_field(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    tenant = new_tenant(client, sessions)
    path = f"{ENDPOINTS}/{create(tenant).json()['id']}"
    assert_names_field(assert_problem(client.patch(path, json={}, headers=tenant.headers), 422), "body")
    assert_names_field(
        assert_problem(client.patch(path, json={"enabled": "off"}, headers=tenant.headers), 422),
        "body.enabled",
    )
    for url in ("http://user:pw@127.0.0.1:9/h", "http://127.0.0.1:9/h\nX-Injected: 1"):
        unsafe = client.patch(path, json={"url": url}, headers=tenant.headers)
        assert_names_field(assert_problem(unsafe, 422, "unsafe_webhook_url"), "body.url")
    assert tenant.get(path).json()["url"] == "http://127.0.0.1:9/hooks"
    deliveries = f"{path}/deliveries"
    assert_names_field(
        assert_problem(tenant.get(deliveries, params={"starting_after": "abc"}), 422), "query.starting_after"
    )
    assert_names_field(assert_problem(tenant.get(deliveries, params={"status": "lost"}), 422), "query.status")
    assert_problem(tenant.post(f"{deliveries}/whdl_unknown/retry"), 404, "webhook_delivery_not_found")
    assert tenant.get(deliveries).json() == {"data": [], "has_more": False, "next_cursor": None}


def test_a_delivery_being_attempted_is_not_retried_until_its_attempt_ends(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    tenant = new_tenant(client, sessions)
    path = f"{ENDPOINTS}/{create(tenant, event_types=['ledger.deposit.posted']).json()['id']}"
    tenant.wallet(5)
    fan_out(runtime)  # the worker's first step: the deposit's event becomes a delivery
    delivery_id = tenant.get(f"{path}/deliveries").json()["data"][0]["id"]
    with sessions.begin() as session:  # a worker has claimed it and is sending it now
        session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.id == delivery_id)
            .values(status="sending", locked_until=utc_now() + timedelta(minutes=1))
        )
    retry = f"{path}/deliveries/{delivery_id}/retry"
    assert_problem(tenant.post(retry), 409, "webhook_delivery_in_flight")
    with sessions.begin() as session:  # the attempt is over (its claim has lapsed): a retry is taken
        session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.id == delivery_id)
            .values(locked_until=utc_now() - timedelta(seconds=1))
        )
    retried = tenant.post(retry)
    assert retried.status_code == 200, retried.text
    assert retried.json()["status"] == "pending"
    # The retry's answer (built from the row it locked) is the delivery as the list reads it.
    assert tenant.get(f"{path}/deliveries").json()["data"] == [retried.json()]


def test_every_write_retried_with_its_key_is_done_once_and_a_refused_one_burns_no_key(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    """Changed, rotated, a delivery retried, deleted, each under a key sent twice: the second answers as the
    first did (the rotated secret too, so nothing was rotated again) and says it is a replay; a change
    refused on its merits leaves its key free for the corrected one."""
    tenant = new_tenant(client, sessions)
    path = f"{ENDPOINTS}/{create(tenant, event_types=['ledger.deposit.posted']).json()['id']}"
    tenant.wallet(5)
    fan_out(runtime)  # the worker's first step: the deposit's event becomes a delivery
    delivery_id = tenant.get(f"{path}/deliveries").json()["data"][0]["id"]

    def send(method: str, below: str, key: str, json: Any = None) -> Any:
        headers = {**tenant.headers, "Idempotency-Key": key}
        return client.request(method, f"{path}{below}", json=json, headers=headers)

    def twice(method: str, below: str, key: str, json: Any = None) -> dict[str, Any]:
        first, again = send(method, below, key, json), send(method, below, key, json)
        assert first.status_code == 200, first.text
        assert "Idempotent-Replayed" not in first.headers
        assert (again.status_code, again.json(), again.headers["Idempotent-Replayed"]) == (
            200,
            first.json(),
            "true",
        )
        answer: dict[str, Any] = first.json()
        return answer

    refused = send("PATCH", "", "change-1", {"url": "http://user:pw@127.0.0.1:9/hooks"})
    assert_names_field(assert_problem(refused, 422, "unsafe_webhook_url"), "body.url")
    changed = twice("PATCH", "", "change-1", {"url": "http://127.0.0.1:9/other", "description": "lobby"})
    assert (changed["url"], changed["description"]) == ("http://127.0.0.1:9/other", "lobby")
    rotated = twice("POST", "/rotate-secret", "rotate-1")
    assert rotated["secret"].startswith("whsec_")
    assert tenant.get(path).json() == {key: value for key, value in rotated.items() if key != "secret"}
    retried = twice("POST", f"/deliveries/{delivery_id}/retry", "retry-1")
    # Never tried yet, so it keeps its whole schedule (the default limit of 18 attempts).
    assert (retried["status"], retried["attempt_limit"]) == ("pending", 18)
    assert twice("DELETE", "", "delete-1") == {
        "id": path.rsplit("/", 1)[1],
        "object": "webhook_endpoint",
        "deleted": True,
    }
    assert_problem(tenant.get(path), 404, "webhook_endpoint_not_found")


@pytest.fixture
def production(tmp_path: Path, database_url: str, engine: Engine) -> Iterator[TestClient]:
    settings = Settings(
        env=Environment.PRODUCTION,
        data_dir=tmp_path / "production",
        database_url=database_url,
        signing_key=private_key_to_pem(generate_signing_key()).decode(),
        seed_encryption_key="ab" * 32,
    )
    runtime = Runtime.from_settings(settings)
    with TestClient(create_app(settings, runtime), raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.org/pokna",  # not https
        "https://127.0.0.1/hooks",  # loopback
        "https://localhost:8443/hooks",  # a name that resolves to loopback
        "https://10.1.2.3/hooks",  # private
        "https://169.254.169.254/latest/meta-data",  # link-local: the cloud metadata service
        "https://[::1]/hooks",
        "https://[::ffff:127.0.0.1]/hooks",  # loopback dressed as IPv6
        "https://100.64.0.1/hooks",  # shared address space
        "https://0.0.0.0/hooks",
    ],
)
def test_production_refuses_urls_that_are_not_https_to_public_addresses(
    production: TestClient, sessions: sessionmaker[Session], url: str
) -> None:
    tenant = new_tenant(production, sessions)
    problem = assert_problem(tenant.post(ENDPOINTS, {"url": url, "event_types": ["game.turn"]}), 422)
    assert problem["code"] == "unsafe_webhook_url"
    assert_names_field(problem, "body.url")
    assert tenant.get(ENDPOINTS).json()["data"] == []


def test_production_accepts_a_public_https_address(
    production: TestClient, sessions: sessionmaker[Session]
) -> None:
    tenant = new_tenant(production, sessions)
    made = tenant.post(ENDPOINTS, {"url": "https://93.184.215.14/hooks", "event_types": ["game.turn"]})
    assert made.status_code == 201, made.text
    changed = production.patch(
        f"{ENDPOINTS}/{made.json()['id']}", json={"url": "https://192.168.0.10/hooks"}, headers=tenant.headers
    )
    assert_names_field(assert_problem(changed, 422, "unsafe_webhook_url"), "body.url")
