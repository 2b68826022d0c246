"""The one pure-ASGI layer in front of FastAPI: request ids, the access log and request metrics, rate
limits (per key, and per client address for requests without a known key), a hard cap on request bodies and the refusal of repeated JSON keys.

One layer rather than one per concern (issue 18): each layer was a coroutine frame and a wrapper around
`send` that every request paid for. The order of the checks is the order the four layers had: a request
id first (every refusal carries it), then the rate limit (before the body is even read), then the body's
size, then its keys."""

from __future__ import annotations

import asyncio
import logging
import re
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pokna import metrics
from pokna.api.asgi_problems import send_problem
from pokna.api.problem_docs import INTERNAL_ERROR
from pokna.api.rate_limits import RateLimits, bearer_key_digest, throttle
from pokna.api.unambiguous_json import refuse_duplicate_key
from pokna.db.types import uuid4_hex
from pokna.logs import request_id_var

log = logging.getLogger("pokna.access")
error_log = logging.getLogger("pokna.api")
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
UNMATCHED_ROUTE = "unmatched"
"""The route label of a path no route matches: a label value per probed path would have no bound."""
CLIENT_CLOSED_REQUEST = 499
"""The status logged and counted for a request whose client hung up before it was answered (nginx's
convention): nothing was answered, and it is no server error, so neither a 500 in the metrics nor an
error in the log."""


NOSNIFF = (b"x-content-type-options", b"nosniff")
"""On every answer, refusals and the 500 included: a browser must not take a JSON answer (a proof, a
problem quoting what a client sent) for a script or a page because its bytes look like one."""


class _ClientGone(Exception):
    """The client hung up while its body was being read."""


class Edge:
    """Accepts a sane `X-Request-ID` or makes one, echoes it, logs one line per request and times it;
    throttles each known bearer key, and everything else per client address (`pokna.api.rate_limits`); refuses bodies over the limit with 413
    problem+json whether or not Content-Length is honest, and bodies that repeat a key
    (`pokna.api.unambiguous_json`); hands the app the whole body at once.

    The line and the metrics name the route's template, never the raw path or the query string: a public
    fairness link's path is its capability, and an `api_key=` a client put in a query string is a
    secret. Headers are never logged."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, body_seconds: float, limits: RateLimits) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.body_seconds = body_seconds
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        offered = headers.get(b"x-request-id", b"").decode("latin-1")
        request_id = offered if _VALID_REQUEST_ID.match(offered) else uuid4_hex()
        scope.setdefault("state", {})["request_id"] = request_id
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        status = 500
        replayed = False
        response_started = False
        added: list[tuple[bytes, bytes]] = []  # the rate limit's headers, once the request is admitted
        request_id_header = (b"x-request-id", request_id.encode())

        async def send_with_headers(message: Message) -> None:
            nonlocal status, replayed, response_started
            if message["type"] == "http.response.start":
                response_started = True
                status = message["status"]
                replayed = (b"idempotent-replayed", b"true") in message.get("headers", [])
                message.setdefault("headers", []).extend([*added, request_id_header, NOSNIFF])
            await send(message)

        key = bearer_key_digest(scope)
        try:
            admitted = await throttle(scope, send_with_headers, self.limits, key)
            if admitted is None:
                return
            added.extend(admitted)
            body = await self._whole_body(scope, receive, send_with_headers, headers.get(b"content-length"))
            if body is None or await refuse_duplicate_key(scope, send_with_headers, body):
                return
            buffered: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

            async def replay() -> Message:
                if buffered:
                    return buffered.pop()
                return await receive()

            await self.app(scope, replay, send_with_headers)
        except _ClientGone:
            status = CLIENT_CLOSED_REQUEST
        except Exception:
            # Answered here rather than by Starlette's ServerErrorMiddleware, which re-raises to the server:
            # uvicorn would log the error a second time and drop the client's keep-alive connection.
            if response_started:
                raise
            added.clear()  # as before the layers were one: the 500 carries the request id alone
            # The route's template, never the path: a public fairness link's path is its capability.
            error_log.exception("unhandled error", extra={"route": _route_template(scope)})
            await send_problem(
                scope,
                send_with_headers,
                status=500,
                code="internal_error",
                title="Internal server error",
                detail=INTERNAL_ERROR.detail,
            )
        finally:
            if key is not None:
                if scope["state"].get("api_key_authenticated"):
                    self.limits.remember(key)
                elif status == 401:
                    self.limits.forget(key)
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

    async def _whole_body(
        self, scope: Scope, receive: Receive, send: Send, declared: bytes | None
    ) -> bytes | None:
        """The body, read whole (bodies are small by contract, so the app never sees a partial one); None
        if it was refused: too large, or not all there within `body_seconds` (a client that stops half way
        would otherwise hold its connection and this request for ever). Raises `_ClientGone` if the client
        went away."""
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(scope, send)
            return None
        chunks: list[bytes] = []
        received = 0
        try:
            async with asyncio.timeout(self.body_seconds):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise _ClientGone
                    chunk = message.get("body", b"")
                    received += len(chunk)
                    if received > self.max_bytes:
                        break
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks) if len(chunks) != 1 else chunks[0]
        except TimeoutError:
            await send_problem(
                scope,
                send,
                status=408,
                code="request_timeout",
                title="Request timeout",
                detail=f"The request's body did not arrive within {self.body_seconds:g} s; nothing was done.",
                headers={"Connection": "close"},
            )
            return None
        await self._refuse(scope, send)
        return None

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


def _route_template(scope: Scope) -> str:
    """FastAPI puts the matched route in the scope; its `path` is the template."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED_ROUTE
