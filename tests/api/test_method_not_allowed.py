"""Every 405 names in `Allow` every method its path serves (RFC 9110 15.5.6), not only the first route's."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from pokna.app import create_app
from pokna.app.openapi_document import UNCONNECTED_DATABASE_URL
from pokna.settings import Environment, Settings

UNSERVED_PROBES = ("OPTIONS", "HEAD", "PUT", "PATCH", "DELETE", "POST", "GET")


@pytest.fixture(scope="module")
def http() -> TestClient:
    # Hundreds of requests without a key from one address: not what this module is about.
    settings = Settings(
        env=Environment.TEST, database_url=UNCONNECTED_DATABASE_URL, client_rate_limit_per_second=0
    )
    return TestClient(create_app(settings))


def _served_by_path(http: TestClient) -> dict[str, set[str]]:
    """From the OpenAPI document, not from the routes the fix reads: what each path is documented to serve."""
    document = http.get("/openapi.json").json()
    served: dict[str, set[str]] = {}
    for path, item in document["paths"].items():
        served[path] = {method.upper() for method in item}
    return served


def _concrete(path: str) -> str:
    return path.replace("{", "x_").replace("}", "")


def test_checkpoints_405_lists_get_and_post(http: TestClient) -> None:
    response = http.options("/v1/ledger/checkpoints")
    assert response.status_code == 405
    assert response.headers["content-type"] == "application/problem+json"
    assert set(response.headers["allow"].split(", ")) == {"GET", "POST"}


def test_every_405_lists_every_method_of_its_path(http: TestClient) -> None:
    served = _served_by_path(http)
    assert any(len(methods) > 1 for methods in served.values())  # the case that matters exists
    probed = 0
    for path, methods in served.items():
        for method in UNSERVED_PROBES:
            if method in methods:
                continue
            response = http.request(method, _concrete(path))
            assert response.status_code == 405, (method, path, response.text)
            assert set(response.headers["allow"].split(", ")) == methods, (method, path)
            if method != "HEAD":  # a HEAD answer has no body
                assert response.json()["code"] == "method_not_allowed"
            probed += 1
    assert probed > 2 * len(served)
