"""Every answer says `X-Content-Type-Options: nosniff` (a browser must not read a JSON answer or a proof as
a script or a page), the edge's own refusals and the 500 included; the verifier page carries its
Content-Security-Policy as a header, with `frame-ancestors`, which a `<meta>` cannot set. That the policy
does not break the page is shown in real Chromium (tests/fairness/test_fairness_link_end_to_end.py)."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator
from importlib import resources

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from pokna.app import create_app
from pokna.app.openapi_document import UNCONNECTED_DATABASE_URL
from pokna.settings import Environment, Settings


def _client(client_rate_limit_per_second: float = 20, client_rate_limit_burst: int = 100) -> TestClient:
    app: FastAPI = create_app(
        Settings(
            env=Environment.TEST,
            database_url=UNCONNECTED_DATABASE_URL,
            max_body_bytes=2048,
            client_rate_limit_per_second=client_rate_limit_per_second,
            client_rate_limit_burst=client_rate_limit_burst,
        )
    )

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("kaboom")

    return TestClient(app, raise_server_exceptions=False)


@pytest.fixture
def http() -> Iterator[TestClient]:
    with _client() as client:
        yield client


def _nosniff(response: object) -> str | None:
    return response.headers.get("x-content-type-options")  # type: ignore[attr-defined, no-any-return]


def test_every_kind_of_answer_says_nosniff(http: TestClient) -> None:
    answers = {
        "page": http.get("/verify"),
        "script": http.get("/verify.js"),
        "document": http.get("/openapi.json"),
        "not found": http.get("/v1/no-such-thing"),
        "method": http.delete("/healthz"),
        "internal error": http.get("/boom"),
        "too large": http.post(
            "/v1/games", content=b"x" * 4096, headers={"content-type": "application/json"}
        ),
        "repeated key": http.post(
            "/v1/games", content=b'{"a": 1, "a": 2}', headers={"content-type": "application/json"}
        ),
    }
    statuses = {name: response.status_code for name, response in answers.items()}
    assert statuses == {
        "page": 200,
        "script": 200,
        "document": 200,
        "not found": 404,
        "method": 405,
        "internal error": 500,
        "too large": 413,
        "repeated key": 400,
    }
    assert {name: _nosniff(response) for name, response in answers.items()} == dict.fromkeys(
        answers, "nosniff"
    )


def test_a_rate_limited_answer_says_nosniff() -> None:
    with _client(client_rate_limit_per_second=1, client_rate_limit_burst=2) as http:
        for _ in range(20):
            response = http.get("/v1/no-such-thing")
            if response.status_code == 429:
                break
    assert response.status_code == 429
    assert _nosniff(response) == "nosniff"


def test_the_verifier_page_carries_its_policy_as_a_header(http: TestClient) -> None:
    response = http.get("/verify")
    policy = response.headers["content-security-policy"]
    directives = dict(directive.strip().split(" ", 1) for directive in policy.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe-inline" not in policy


def test_the_pages_style_hash_is_the_hash_of_its_style() -> None:
    """The page's one inline `<style>` is allowed by its hash, nothing else inline: edit the style and this
    names the hash to put in the page's policy."""
    page = resources.files("pokna").joinpath("static", "verify.html").read_text(encoding="utf-8")
    (style,) = re.findall(r"<style>(.*?)</style>", page, flags=re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    (meta,) = re.findall(r'http-equiv="Content-Security-Policy"\s+content="([^"]*)"', page)
    assert f"style-src 'self' 'sha256-{digest}'" in meta
