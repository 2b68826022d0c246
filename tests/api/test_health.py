from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from pokna.app import create_app
from pokna.db import migrate
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings


def test_healthz_answers_without_the_database(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_reports_the_head_revision(client: TestClient) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready"
    assert body["database"] == "postgresql"
    assert body["embedded"] is False  # the test's database comes by URL
    assert body["schema_revision"] == migrate.head_revision()


def test_a_readiness_probe_every_few_seconds_logs_nothing(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 37, item 9: each /readyz logged Alembic's two set-up lines ("Context impl PostgresqlImpl.",
    "Will assume transactional DDL."); a probe every few seconds filled the log."""
    with caplog.at_level(logging.DEBUG):
        for _ in range(5):
            assert client.get("/readyz").status_code == 200
    assert [record.getMessage() for record in caplog.records if record.name.startswith("alembic")] == []


def test_readyz_is_503_problem_when_schema_is_behind(empty_database_url: str, tmp_path: object) -> None:
    settings = Settings(env=Environment.TEST, database_url=empty_database_url)
    with TestClient(create_app(settings, Runtime.from_settings(settings))) as client:
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "schema_out_of_date"


def test_readyz_is_503_problem_when_database_is_unreachable() -> None:
    settings = Settings(
        env=Environment.TEST,
        database_url="postgresql+psycopg://nobody@127.0.0.1:1/nowhere?connect_timeout=2",
    )
    with TestClient(create_app(settings)) as client:
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "database_unavailable"


def test_the_browser_verifier_is_served(client: TestClient) -> None:
    page = client.get("/verify")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert 'id="verdict"' in page.text
    script = client.get("/verify.js")
    assert script.status_code == 200
    assert 'from "./pokna-verify/index.js"' in script.text  # the page's checks are the core's module
    core = client.get("/pokna-verify/crypto.js")
    assert core.status_code == 200
    assert "crypto.subtle" in core.text


def test_fairness_keys_are_public_and_name_the_current_key(client: TestClient) -> None:
    keys = client.get("/v1/fairness/keys").json()["keys"]
    assert [key["status"] for key in keys] == ["current"]
    assert keys[0]["algorithm"] == "Ed25519"
    assert keys[0]["key_id"].startswith("ed25519:")
