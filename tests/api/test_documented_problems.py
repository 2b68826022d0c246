"""Problems the OpenAPI document declares that the rest of the suite does not otherwise produce: each is
produced here, over HTTP, through the `client` fixture (which records it for the end-of-run check in
tests/conftest.py and fails on any answer the document does not declare)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.api import health
from pokna.api.idempotency import request_fingerprint
from pokna.db.models.idempotency import IdempotencyRecord
from pokna.db.types import utc_now
from pokna.runtime import Runtime
from support.api_checks import assert_problem
from support.steering import steering_seeds
from support.tenant_api import TenantApi, new_tenant
from support.webhook_worker import fan_out

LIMIT = 65536


@pytest.fixture
def api(client: TestClient, sessions: sessionmaker[Session]) -> TenantApi:
    return new_tenant(client, sessions)


def test_every_operation_refuses_an_oversized_body(client: TestClient, api: TenantApi) -> None:
    document = client.get("/openapi.json").json()
    too_large = b"x" * (LIMIT + 1)
    for path, item in document["paths"].items():
        concrete = path.replace("{", "").replace("}", "")
        for method in item:
            response = client.request(method, concrete, content=too_large, headers=api.headers)
            assert_problem(response, 413, "payload_too_large")


def test_readiness_says_why_it_is_not_ready(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    async def unreachable(_connection: Any) -> str:
        raise psycopg.OperationalError("connection refused")

    async def behind(_connection: Any) -> str:
        return "0001"

    monkeypatch.setattr(health, "schema_revision", unreachable)
    assert_problem(client.get("/readyz"), 503, "database_unavailable")
    monkeypatch.setattr(health, "schema_revision", behind)
    assert_problem(client.get("/readyz"), 503, "schema_out_of_date")


def test_an_unexpected_failure_is_a_500_problem(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> str:
        raise RuntimeError("a bug")

    monkeypatch.setattr(health, "head_revision", broken)
    problem = assert_problem(client.get("/readyz"), 500, "internal_error")
    assert "a bug" not in json.dumps(problem)


def test_every_keyed_write_refuses_a_retry_while_the_first_runs(
    api: TenantApi, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    """A running request holds its claim row locked: a retry that cannot lock it is told so."""
    vigo, player = api.wallet(100), api.wallet(100)
    endpoint = api.post(
        "/v1/webhooks/endpoints", {"url": "http://127.0.0.1:9/hooks", "event_types": ["game.created"]}
    ).json()
    game = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 5}).json()
    table = api.post("/v1/tables", {"account_ids": [vigo, player], "stake": 5}).json()
    hooks = f"/v1/webhooks/endpoints/{endpoint['id']}"
    fan_out(runtime)  # the worker's first step: the game's event becomes a delivery
    delivery = api.get(f"{hooks}/deliveries").json()["data"][0]
    requests: list[tuple[str, str, Any]] = [
        ("POST", "/v1/accounts", {"external_id": "late"}),
        ("POST", f"/v1/accounts/{player}/deposits", {"amount": 5}),
        ("POST", f"/v1/accounts/{player}/withdrawals", {"amount": 5}),
        ("POST", "/v1/ledger/checkpoints", None),
        ("POST", "/v1/games", {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 5}),
        (
            "POST",
            f"/v1/games/{game['id']}/actions",
            {"type": "set_client_seed", "account_id": player, "client_seed": "x"},
        ),
        ("POST", "/v1/tables", {"account_ids": [vigo, player], "stake": 5}),
        ("POST", f"/v1/tables/{table['id']}/rounds", None),
        ("PUT", "/v1/tenant/settings", {"rake": {"bps": 100}}),
        ("POST", "/v1/webhooks/endpoints", {"url": "http://127.0.0.1:9/b", "event_types": ["game.turn"]}),
        ("PATCH", hooks, {"description": "late"}),
        ("DELETE", hooks, None),
        ("POST", f"{hooks}/rotate-secret", None),
        ("POST", f"{hooks}/deliveries/{delivery['id']}/retry", None),
    ]
    now = utc_now()
    with sessions.begin() as session:  # each key claimed for this very request, never completed
        for index, (method, path, body) in enumerate(requests):
            raw = json.dumps(body).encode() if body is not None else b""
            session.add(
                IdempotencyRecord(
                    tenant_id=api.tenant_id,
                    key=f"running-{index}",
                    request_fingerprint=request_fingerprint(method, path, raw),
                    claim_token="a-request-still-running",
                    created_at=now,
                    expires_at=now + timedelta(hours=24),
                )
            )
    with sessions() as holder:  # the first requests, alive and at work, hold their claims
        holder.execute(
            select(IdempotencyRecord)
            .where(IdempotencyRecord.tenant_id == api.tenant_id, IdempotencyRecord.key.like("running-%"))
            .with_for_update()
        ).all()
        for index, (method, path, body) in enumerate(requests):
            headers = {**api.headers, "Idempotency-Key": f"running-{index}"}
            response = api.client.request(method, path, json=body, headers=headers)
            assert_problem(response, 409, "idempotency_request_in_progress")
            assert response.headers["Retry-After"] == "1", (method, path)  # issue 28, F13
        holder.rollback()


def _steer(
    api: TenantApi, sessions: sessionmaker[Session], runtime: Runtime, game: Any, colors: Sequence[str]
) -> None:
    """Choose the client seeds so that the first rolls come out in `colors` (the test plays the operator)."""
    for seat, seed in zip(game["seats"], steering_seeds(sessions, runtime, game, colors), strict=True):
        body = {"type": "set_client_seed", "account_id": seat["account_id"], "client_seed": seed}
        assert api.post(f"/v1/games/{game['id']}/actions", body).status_code == 200


def _act(api: TenantApi, game_id: str, kind: str, account_id: str, **extra: Any) -> Any:
    return api.post(f"/v1/games/{game_id}/actions", {"type": kind, "account_id": account_id, **extra})


def test_a_second_vote_and_an_unaffordable_challenge_are_refused(
    api: TenantApi, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    vigo, first, second = api.wallet(100), api.wallet(100), api.wallet(100)
    game = api.post(
        "/v1/games", {"vigo_account_id": vigo, "player_account_ids": [first, second], "stake": 5}
    ).json()
    _steer(api, sessions, runtime, game, ["red", "red", "red"])
    for kind, account in (("start", vigo), ("roll", first), ("roll", second)):
        assert _act(api, game["id"], kind, account).status_code == 200
    assert _act(api, game["id"], "vote", first, choice="split").json()["phase"] == "voting"
    assert_problem(_act(api, game["id"], "vote", first, choice="split"), 409, "already_voted")

    poor = api.wallet(5)
    duel = api.post(
        "/v1/games",
        {"vigo_account_id": vigo, "player_account_ids": [poor], "stake": 5, "challenge_raise": 10},
    ).json()
    _steer(api, sessions, runtime, duel, ["blue", "blue"])
    assert _act(api, duel["id"], "start", vigo).status_code == 200
    lone = _act(api, duel["id"], "roll", poor).json()
    assert (lone["phase"], lone["turn"]["allowed_actions"]) == ("lone_survivor", ["claim"])
    assert_problem(_act(api, duel["id"], "challenge", poor), 409, "challenge_unaffordable")
