from __future__ import annotations

import json
from pathlib import Path

from pokna.api.openapi_document import openapi_document, render_openapi

COMMITTED = Path(__file__).resolve().parents[1] / "openapi" / "openapi.json"


def test_committed_openapi_document_is_current() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == render_openapi(), (
        "openapi/openapi.json is stale: run `make openapi` and commit the result"
    )


def test_rendering_is_deterministic() -> None:
    assert render_openapi() == render_openapi()


def test_every_error_response_is_problem_json() -> None:
    document = openapi_document()
    assert document["openapi"].startswith("3.1")
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")):
                    assert list(response["content"]) == ["application/problem+json"], (path, method, status)
    assert "HTTPValidationError" not in json.dumps(document)


def test_every_request_body_and_error_is_documented_with_examples() -> None:
    document = openapi_document()
    schemas = document["components"]["schemas"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            assert operation.get("summary"), (path, method)
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")):
                    assert response["content"]["application/problem+json"]["examples"], (path, method, status)
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None:
                continue
            ref = body["schema"].get("$ref", "")
            schema = schemas[ref.rsplit("/", 1)[-1]] if ref else body["schema"]
            assert body.get("examples") or schema.get("examples"), (path, method)
