"""The FastAPI application, assembled from every domain's router on the HTTP kernel (pokna.api).
Created per process; holds no game state."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.openapi.utils import get_fields_from_routes, get_openapi
from fastapi.routing import APIRoute
from pydantic import BaseModel

from pokna import __version__
from pokna.api import health, hot_paths, metrics
from pokna.api.database_gate import DatabaseGate
from pokna.api.metrics_backlog import BacklogGauges
from pokna.api.middleware import Edge
from pokna.api.problem_docs import PROBLEM_JSON
from pokna.api.problems import Problem, install_problem_handlers
from pokna.api.rate_limits import CLIENT_POLICY_NAME, RateLimits, TokenBuckets
from pokna.app import webhook_events
from pokna.app.answer_examples import example_answer
from pokna.app.docs import install_docs
from pokna.app.openapi_details import add_details, restore_webhook_examples
from pokna.backlog import read_backlog
from pokna.bundles import routes as audit
from pokna.dealer import link_routes as fairness
from pokna.dealer import routes as games
from pokna.dealer import tenant_settings_routes as tenant_settings
from pokna.ledger import routes as accounts
from pokna.public_log import link_routes as public_link
from pokna.public_log import routes as public_log
from pokna.runtime import Runtime
from pokna.settings import Settings, get_settings
from pokna.webhooks import routes as webhooks

DESCRIPTION = """\
Pokna runs the Huttese dice game of Vigo's Favor for integrating apps: provably fair rolls
(commit–reveal HMAC-SHA256), a double-entry ledger, and signed, verifiable proofs.

Every error is an RFC 9457 `application/problem+json` document with a stable `code`; each operation
lists exactly the codes it can answer. Authenticate with `Authorization: Bearer <API key>`; send an
`Idempotency-Key` with every POST so that a retry is safe; deposits and withdrawals, which move
money, refuse a request without one (400 `idempotency_key_required`).
"""

OPENAPI_URL = "/openapi.json"

TAGS = [
    {"name": "accounts", "description": "Player wallets, deposits and withdrawals."},
    {"name": "ledger", "description": "The tenant's books: trial balance, exports, signed checkpoints."},
    {
        "name": "games",
        "description": "One game of Vigo's Favor: create it, act in it, read it and its proof.",
    },
    {"name": "tables", "description": "A fixed seat order dealing round after round."},
    {"name": "fairness", "description": "Public keys, public fairness links and the browser verifier."},
    {
        "name": "public log",
        "description": "Every finished game in its tenant's append-only public log: signed checkpoints, "
        "inclusion and consistency proofs (RFC 9162, C2SP tlog-checkpoint). No API key.",
    },
    {
        "name": "audit",
        "description": "The auditor's bundle: ledger, proofs, checkpoints and keys, to verify offline.",
    },
    {
        "name": "webhooks",
        "description": "Endpoints that receive signed events (Standard Webhooks) instead of polling.",
    },
    {"name": "tenant", "description": "Your tenant's settings, such as the default rake."},
    {"name": "health", "description": "Liveness and readiness probes."},
    {"name": "operations", "description": "Prometheus metrics."},
]


def create_app(settings: Settings | None = None, runtime: Runtime | None = None) -> FastAPI:
    settings = settings or get_settings()
    runtime = runtime or Runtime.from_settings(settings)
    app = FastAPI(
        title="Pokna",
        version=__version__,
        description=DESCRIPTION,
        openapi_tags=TAGS,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # served from bytes built once: `_serve_openapi`
        # Starlette answers a path with a stray slash (`/healthz/`) with a 307 whose Location it builds
        # from the request's Host header, which the client chose: a redirect anywhere, under our name.
        # Such a path is unknown here like any other: 404 problem+json.
        redirect_slashes=False,
        generate_unique_id_function=_operation_id,
        lifespan=partial(_lifespan, runtime),
    )
    app.state.runtime = runtime
    metrics.enable()  # first: the database gate reports its places
    app.state.database_gate = DatabaseGate.for_settings(settings)
    app.state.backlog = BacklogGauges(partial(read_backlog, runtime.monitoring))
    install_problem_handlers(app)
    _serve_openapi(app)
    install_docs(app)
    app.include_router(health.router)
    app.include_router(accounts.router)
    app.include_router(games.router)
    app.include_router(public_link.router)
    app.include_router(fairness.router)
    app.include_router(public_log.router)
    app.include_router(audit.router)
    app.include_router(metrics.router)
    app.include_router(tenant_settings.router)
    app.include_router(webhooks.router)
    app.webhooks.include_router(webhook_events.events)
    hot_paths.install(app)  # once every route is in: the hot routes skip the scan of the others
    # Request ids, the access log, rate limits, the body cap and repeated keys: one layer (pokna.api.middleware).
    app.add_middleware(
        Edge,
        max_bytes=settings.max_body_bytes,
        body_seconds=settings.request_body_timeout_seconds,
        limits=_rate_limits(settings),
    )
    app.openapi = lambda: _problem_only_openapi(app)  # type: ignore[method-assign]
    return app


@asynccontextmanager
async def _lifespan(runtime: Runtime, app: FastAPI) -> AsyncIterator[None]:
    """The pools live in the worker's event loop, from startup to shutdown (pokna.db.aio): the requests'
    and the monitoring's (`/readyz`, `/metrics`)."""
    async with runtime.aio.opened(), runtime.monitoring.opened(), metrics.worker_lifespan(app):
        yield


def _serve_openapi(app: FastAPI) -> None:
    """`/openapi.json` as bytes rendered on first request and kept: FastAPI's own route keeps the
    document but serializes it again on every request (~0.3 MB of JSON), for anyone, without a key."""
    rendered: list[bytes] = []

    async def openapi_json(_request: Request) -> Response:  # no I/O: stays in the event loop
        if not rendered:
            document = app.openapi()
            rendered.append(json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode())
        return Response(rendered[0], media_type="application/json")

    app.add_route(OPENAPI_URL, openapi_json, include_in_schema=False)


def _rate_limits(settings: Settings) -> RateLimits:
    per_key = per_client = None
    if settings.rate_limit_per_second:
        per_key = TokenBuckets(settings.rate_limit_per_second, settings.rate_limit_burst)
    if settings.client_rate_limit_per_second:
        per_client = TokenBuckets(
            settings.client_rate_limit_per_second, settings.client_rate_limit_burst, name=CLIENT_POLICY_NAME
        )
    return RateLimits(per_key, per_client, exempt=metrics.allowed_scrape(settings))


def _operation_id(route: APIRoute) -> str:
    """The route's function name (`create_game`, `act`): what a generated client calls the operation."""
    return route.name


def _problem_only_openapi(app: FastAPI) -> dict[str, Any]:
    """Each operation lists its own problems (`responses=problems(...)` on its route, all problem+json).
    FastAPI adds its own 422 shape to an operation with parameters that did not list 422: such an
    operation has no parameter that can fail validation, so that entry goes."""
    if app.openapi_schema:
        return app.openapi_schema
    document = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        tags=app.openapi_tags,
        routes=app.routes,
        webhooks=app.webhooks.routes,
        servers=[{"url": "http://127.0.0.1:8000", "description": "pokna serve on the embedded default"}],
    )
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            for status, response in operation.get("responses", {}).items():
                content = response.get("content", {}).get("application/json")
                example = example_answer(operation.get("operationId", ""))
                if status.startswith("2") and content is not None and example is not None:
                    content["example"] = example
            validation = operation.get("responses", {}).get("422", {})
            if PROBLEM_JSON not in validation.get("content", {PROBLEM_JSON: None}):
                del operation["responses"]["422"]
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    _restore_nulls_in_examples(app, schemas)
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    problem_schema = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(problem_schema.pop("$defs", {}))
    schemas["Problem"] = problem_schema
    add_details(document)
    restore_webhook_examples(document, webhook_events.EXAMPLES)
    app.openapi_schema = document
    return document


def _restore_nulls_in_examples(app: FastAPI, schemas: dict[str, Any]) -> None:
    """FastAPI drops every null from the document it renders, the nulls of the models' own examples too,
    which leaves an example without a required field (`delivered_at: null`). Put each model's examples
    back as the model declares them."""
    for field in get_fields_from_routes([*app.routes, *app.webhooks.routes]):
        model = field.field_info.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            continue
        schema = model.model_json_schema(mode="serialization")
        for name, definition in [(model.__name__, schema), *schema.get("$defs", {}).items()]:
            if name in schemas and "examples" in definition:
                schemas[name]["examples"] = definition["examples"]
