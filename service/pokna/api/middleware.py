"""Pure ASGI middleware: request ids, the access log and request metrics, and a hard cap on request bodies."""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pokna import metrics
from pokna.api.asgi_problems import send_problem
from pokna.logs import request_id_var

log = logging.getLogger("pokna.access")
error_log = logging.getLogger("pokna.api")
INTERNAL_ERROR_DETAIL = (
    "An unexpected error occurred; nothing was committed. Quote the request id when reporting it."
)
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
UNMATCHED_ROUTE = "unmatched"
"""The route label of a path no route matches: a label value per probed path would have no bound."""


class RequestContext:
    """Accepts a sane `X-Request-ID` or makes one, echoes it, logs one line per request and times it.

    The line and the metrics name the route's template, never the raw path or the query string: a public
    fairness link's path is its capability, and an `api_key=` a client put in a query string is a
    secret. Headers are never logged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        offered = headers.get(b"x-request-id", b"").decode("latin-1")
        request_id = offered if _VALID_REQUEST_ID.match(offered) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        status = 500
        replayed = False
        response_started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, replayed, response_started
            if message["type"] == "http.response.start":
                response_started = True
                status = message["status"]
                replayed = (b"idempotent-replayed", b"true") in message.get("headers", [])
                message.setdefault("headers", []).append((b"x-request-id", request_id.encode()))
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            # Answered here rather than by Starlette's ServerErrorMiddleware, which re-raises to the server:
            # uvicorn would log the error a second time and drop the client's keep-alive connection.
            if response_started:
                raise
            # The route's template, never the path: a public fairness link's path is its capability.
            error_log.exception("unhandled error", extra={"route": _route_template(scope)})
            await send_problem(
                scope,
                send_with_id,
                status=500,
                code="internal_error",
                title="Internal server error",
                detail=INTERNAL_ERROR_DETAIL,
            )
        finally:
            seconds = time.perf_counter() - started
            route = _route_template(scope)
            metrics.http_request(scope["method"], route, status, seconds)
            if replayed:
                metrics.idempotent_replay(route)
            log.info(
                "request",
                extra={
                    "method": scope["method"],
                    "route": route,
                    "status": status,
                    "duration_ms": round(seconds * 1000, 2),
                },
            )
            request_id_var.reset(token)


def _route_template(scope: Scope) -> str:
    """FastAPI puts the matched route in the scope; its `path` is the template."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED_ROUTE


class BodySizeLimit:
    """Refuses bodies over the limit with 413 problem+json, whether or not Content-Length is honest."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(scope, send)
            return
        # Bodies are small by contract, so read the whole body first: the app never sees a partial one.
        chunks: list[bytes] = []
        received = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > self.max_bytes:
                await self._refuse(scope, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        buffered: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay() -> Message:
            if buffered:
                return buffered.pop()
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        await send_problem(
            scope,
            send,
            status=413,
            code="payload_too_large",
            title="Payload too large",
            detail=f"Request bodies are limited to {self.max_bytes} bytes.",
            invalid_params=[{"name": "body", "reason": "too large", "pointer": ""}],
        )
