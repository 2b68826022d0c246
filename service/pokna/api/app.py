"""The FastAPI application, assembled from routers. Created per process; holds no game state."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from pokna import __version__
from pokna.api import (
    accounts,
    audit,
    fairness,
    games,
    health,
    metrics,
    tenant_settings,
    webhook_events,
    webhooks,
)
from pokna.api.middleware import Edge
from pokna.api.problems import install_problem_handlers, problem_examples, problem_responses
from pokna.api.rate_limits import TokenBuckets
from pokna.runtime import Runtime
from pokna.settings import Settings, get_settings

DESCRIPTION = """\
Pokna runs the Huttese dice game of Vigo's Favor for integrating apps: provably fair rolls
(commit–reveal HMAC-SHA256), a double-entry ledger, and signed, verifiable proofs.

Every error is an RFC 9457 `application/problem+json` document with a stable `code`.
"""


def create_app(settings: Settings | None = None, runtime: Runtime | None = None) -> FastAPI:
    settings = settings or get_settings()
    runtime = runtime or Runtime.from_settings(settings)
    app = FastAPI(
        title="Pokna",
        version=__version__,
        description=DESCRIPTION,
        responses=problem_responses(400, 404, 405, 413, 422, 429, 500, 503),
        lifespan=metrics.worker_lifespan,
    )
    app.state.runtime = runtime
    metrics.enable(runtime.engine)
    install_problem_handlers(app)
    app.include_router(health.router)
    app.include_router(accounts.router)
    app.include_router(games.router)
    app.include_router(fairness.router)
    app.include_router(audit.router)
    app.include_router(metrics.router)
    app.include_router(tenant_settings.router)
    app.include_router(webhooks.router)
    app.webhooks.include_router(webhook_events.events)
    # Request ids, the access log, rate limits, the body cap and repeated keys: one layer (pokna.api.middleware).
    app.add_middleware(Edge, max_bytes=settings.max_body_bytes, buckets=_rate_limits(settings))
    app.openapi = lambda: _problem_only_openapi(app)  # type: ignore[method-assign]
    return app


def _rate_limits(settings: Settings) -> TokenBuckets | None:
    if settings.rate_limit_per_second == 0:
        return None
    return TokenBuckets(settings.rate_limit_per_second, settings.rate_limit_burst)


def _problem_only_openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI documents its own 422 shape; ours is problem+json everywhere, so say so everywhere."""
    if app.openapi_schema:
        return app.openapi_schema
    document = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
        webhooks=app.webhooks.routes,
        servers=[{"url": "http://127.0.0.1:8000", "description": "`pokna serve` on the embedded default"}],
    )
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            for status, response in operation.get("responses", {}).items():
                if status[0] in "45":
                    response["content"] = {
                        "application/problem+json": {
                            "schema": {"$ref": "#/components/schemas/Problem"},
                            "examples": problem_examples(int(status)),
                        }
                    }
    schemas = document.get("components", {}).get("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    app.openapi_schema = document
    return document
