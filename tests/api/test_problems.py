"""Every error, the framework's own included, is RFC 9457 problem+json with a stable code."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from pokna.app import create_app
from pokna.app.openapi_document import UNCONNECTED_DATABASE_URL
from pokna.settings import Environment, Settings

PROBLEM = "application/problem+json"


class Wager(BaseModel):
    stake: int = Field(gt=0)
    memo: str


@pytest.fixture
def app() -> FastAPI:
    settings = Settings(env=Environment.TEST, database_url=UNCONNECTED_DATABASE_URL, max_body_bytes=2048)
    app = create_app(settings)

    @app.post("/echo")
    def echo(wager: Wager) -> Wager:
        return wager

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("kaboom")

    return app


@pytest.fixture
def http(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def _assert_problem(response: Any, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status
    assert response.headers["content-type"] == PROBLEM
    body: dict[str, object] = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"] == f"https://pokna.dev/problems/{code}"
    assert isinstance(body["title"], str)
    assert body["title"]
    return body


def test_unknown_path_is_404_problem(http: TestClient) -> None:
    _assert_problem(http.get("/v1/no-such-thing"), 404, "not_found")


def test_a_trailing_slash_is_404_and_never_redirected(http: TestClient) -> None:
    """Starlette redirected `/healthz/` to a Location built from the Host header (issue 28, F11)."""
    response = http.get("/healthz/", headers={"Host": "attacker.example"}, follow_redirects=False)
    _assert_problem(response, 404, "not_found")
    assert "location" not in response.headers


def test_wrong_method_is_405_problem(http: TestClient) -> None:
    _assert_problem(http.delete("/healthz"), 405, "method_not_allowed")


def test_malformed_json_is_400_problem(http: TestClient) -> None:
    response = http.post("/echo", content=b'{"stake": 1,', headers={"content-type": "application/json"})
    _assert_problem(response, 400, "malformed_json")


def test_validation_error_names_each_field(http: TestClient) -> None:
    body = _assert_problem(http.post("/echo", json={"stake": -5}), 422, "validation_error")
    params = {param["name"]: param for param in body["invalid_params"]}  # type: ignore[attr-defined]
    assert set(params) == {"body.stake", "body.memo"}
    assert params["body.stake"]["pointer"] == "/stake"
    assert "body.stake" in str(body["detail"])


def test_oversized_body_is_413_problem(http: TestClient) -> None:
    response = http.post("/echo", json={"stake": 1, "memo": "x" * 5000})
    _assert_problem(response, 413, "payload_too_large")


def test_oversized_body_without_content_length_is_413(http: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"stake": 1, "memo": "'
        for _ in range(10):
            yield b"x" * 500
        yield b'"}'

    response = http.post("/echo", content=chunks(), headers={"content-type": "application/json"})
    _assert_problem(response, 413, "payload_too_large")


def test_body_under_the_limit_passes(http: TestClient) -> None:
    response = http.post("/echo", json={"stake": 3, "memo": "x" * 100})
    assert response.status_code == 200
    assert response.json() == {"stake": 3, "memo": "x" * 100}


def test_unhandled_exception_is_500_problem_without_internals(http: TestClient) -> None:
    body = _assert_problem(http.get("/boom"), 500, "internal_error")
    assert "kaboom" not in str(body)


def test_request_id_is_echoed_and_quoted_in_problems(http: TestClient) -> None:
    response = http.get("/missing", headers={"X-Request-ID": "req-123"})
    assert response.headers["x-request-id"] == "req-123"
    assert response.json()["request_id"] == "req-123"


def test_unsafe_request_id_is_replaced(http: TestClient) -> None:
    response = http.get("/healthz", headers={"X-Request-ID": "bad id\nwith newline"})
    assert response.headers["x-request-id"] != "bad id\nwith newline"
    assert len(response.headers["x-request-id"]) == 32
