"""RFC 9457 problem details for every error the API can return, including the framework's own."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from pokna.api.asgi_problems import invalid_param, problem_document
from pokna.api.problem_docs import INTERNAL_ERROR, PROBLEM_JSON
from pokna.db.sqlstates import refusal
from pokna.errors import DatabaseUnavailable, PoknaError
from pokna_verify.invariant import of_type

log = logging.getLogger("pokna.api")

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "too_many_requests",
    503: "service_unavailable",
}


class InvalidParam(BaseModel):
    name: str = Field(description="Dotted path of the offending field, e.g. `body.stake`.")
    reason: str
    pointer: str = Field(description="JSON Pointer (RFC 6901) into the request part, e.g. `/stake`.")


class Problem(BaseModel):
    """RFC 9457 problem details. `code` is stable and machine-readable; `title`/`detail` are for people."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "type": "https://pokna.dev/problems/validation_error",
                    "title": "Request validation failed",
                    "status": 422,
                    "detail": "body.stake: Input should be greater than 0",
                    "code": "validation_error",
                    "invalid_params": [
                        {
                            "name": "body.stake",
                            "reason": "Input should be greater than 0",
                            "pointer": "/stake",
                        }
                    ],
                }
            ]
        },
    )

    type: str
    title: str
    status: int
    detail: str
    code: str
    instance: str | None = None
    request_id: str | None = None
    invalid_params: list[InvalidParam] | None = None


def problem_response(
    request: Request, *, status: int, code: str, title: str, detail: str, **extensions: Any
) -> JSONResponse:
    request_id = getattr(request.state, "request_id", None)
    body = problem_document(
        status=status,
        code=code,
        title=title,
        detail=detail,
        instance=request.url.path,
        request_id=request_id,
        extensions=extensions,
    )
    return JSONResponse(jsonable_encoder(body), status_code=status, media_type=PROBLEM_JSON)


def _malformed_json(request: Request) -> JSONResponse:
    return problem_response(
        request,
        status=400,
        code="malformed_json",
        title="Malformed JSON",
        detail="The request body is not valid JSON.",
        invalid_params=[{"name": "body", "reason": "not valid JSON", "pointer": ""}],
    )


def _client_location(error: Any, body: Any) -> tuple[Any, ...]:
    """Where the client put the bad value. Pydantic names a tagged union's member (`body.roll.account_id`);
    the client never wrote `roll` as a key, so drop the tag and name the field as sent."""
    location = tuple(error["loc"])
    kept = list(location[:1])
    node = body
    for part in location[1:]:
        if isinstance(node, dict) and part not in node and node.get("type") == part:
            continue
        kept.append(part)
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    if error.get("type") in ("union_tag_invalid", "union_tag_not_found"):
        kept.append(str((error.get("ctx") or {}).get("discriminator", "type")).strip("'"))
    return tuple(kept)


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    refused = of_type(exc, RequestValidationError, "the handler registered for it")
    errors = list(refused.errors())
    if any(error.get("type") == "json_invalid" for error in errors):
        return _malformed_json(request)
    params = [invalid_param(_client_location(error, refused.body), str(error["msg"])) for error in errors]
    detail = "; ".join(f"{param['name']}: {param['reason']}" for param in params)
    return problem_response(
        request,
        status=422,
        code="validation_error",
        title="Request validation failed",
        detail=detail,
        invalid_params=params,
    )


async def _on_http_error(request: Request, exc: Exception) -> JSONResponse:
    exc = of_type(exc, StarletteHTTPException, "the handler registered for it")
    if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
        # FastAPI's own refusal of a body json could not decode (e.g. a 5000-digit number): same as malformed JSON.
        return _malformed_json(request)
    code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
    response = problem_response(
        request,
        status=exc.status_code,
        code=code,
        title=code.replace("_", " ").capitalize(),
        detail=str(exc.detail),
    )
    if exc.headers:
        response.headers.update(exc.headers)
    if exc.status_code == 405:
        response.headers["Allow"] = ", ".join(_methods_of_path(request))
    return response


def _methods_of_path(request: Request) -> list[str]:
    """Every method any route serves at this path. Starlette's 405 names only the first route that matched
    the path, and each FastAPI route serves one method, so `Allow` would omit the others (RFC 9110 15.5.6
    asks for all of them). The routes of included routers are reached through their contexts."""
    methods: set[str] = set()
    for route in iter_route_contexts(request.app.routes):
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods.update(route.methods or ())
    return sorted(methods)


async def _on_domain_error(request: Request, exc: Exception) -> JSONResponse:
    exc = of_type(exc, PoknaError, "the handler registered for it")
    response = problem_response(
        request, status=exc.status, code=exc.code, title=exc.title, detail=exc.detail, **exc.extensions
    )
    response.headers.update(exc.headers)
    if isinstance(exc, DatabaseUnavailable):
        response.headers["Retry-After"] = str(request.app.state.runtime.settings.database_retry_after_seconds)
    return response


async def _on_database_error(request: Request, exc: Exception) -> JSONResponse:
    """A database error that means something to a client (a held wallet, a database that cannot serve now:
    `pokna.db.sqlstates.refusal`) is answered as that; any other is a bug. Logged without the exception's
    text, which carries the statement and its parameters."""
    refused = refusal(exc)
    if refused is None:
        return await _on_unhandled(request, exc)
    if isinstance(refused, DatabaseUnavailable):
        log.warning(
            "database unavailable: %s (%s)",
            refused.detail,
            type(exc).__name__,
            extra={"path": request.url.path},
        )
    return await _on_domain_error(request, refused)


async def _on_unhandled(request: Request, exc: Exception) -> JSONResponse:
    # The route's template, never the path: a public fairness link's path is its capability.
    route = getattr(request.scope.get("route"), "path", None)
    log.exception("unhandled error", extra={"route": route if isinstance(route, str) else "unmatched"})
    return problem_response(
        request,
        status=500,
        code="internal_error",
        title="Internal server error",
        detail=INTERNAL_ERROR.detail,
    )


def install_problem_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(PoknaError, _on_domain_error)
    app.add_exception_handler(psycopg.Error, _on_database_error)  # every route is on psycopg (pokna.db.aio)
    app.add_exception_handler(Exception, _on_unhandled)
