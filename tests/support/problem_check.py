"""Holds every problem the API answers in a test to the OpenAPI document: an ASGI middleware that notes
each problem+json answer whose (status, code) the matched operation does not declare.

The `client` fixture installs it, so every API test that uses the fixture checks the document as a side
effect, and fails (at teardown) on a code an operation answered without declaring it. Each test checks its
own answers, so nothing is shared between xdist workers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pokna.api.problem_docs import PROBLEM_JSON, documented_codes


@dataclass
class ProblemLog:
    """What the app answered, and the answers the document does not declare."""

    seen: list[tuple[str, str, int, str]] = field(default_factory=list)
    undocumented: list[str] = field(default_factory=list)


class DocumentedProblemsCheck:
    def __init__(self, app: ASGIApp, fastapi_app: FastAPI, log: ProblemLog) -> None:
        self.app = app
        self.fastapi_app = fastapi_app
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 0
        is_problem = False
        body = b""

        async def noting(message: Message) -> None:
            nonlocal status, is_problem, body
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = dict(message.get("headers", []))
                is_problem = headers.get(b"content-type", b"").startswith(PROBLEM_JSON.encode())
            elif message["type"] == "http.response.body" and is_problem:
                body += message.get("body", b"")
            await send(message)

        await self.app(scope, receive, noting)
        if is_problem:
            self._check(scope, status, json.loads(body))

    def _check(self, scope: Scope, status: int, problem: dict[str, Any]) -> None:
        route = getattr(scope.get("route"), "path", None)
        method = scope["method"].lower()
        operation = self.fastapi_app.openapi()["paths"].get(route, {}).get(method)
        if operation is None:
            return  # no such operation (an unknown path, a method the path lacks): nothing to hold it to
        self.log.seen.append((method, str(route), status, problem["code"]))
        if (status, problem["code"]) not in documented_codes(operation):
            self.log.undocumented.append(f"{method.upper()} {route} answered {status} {problem['code']}")


def install(app: FastAPI) -> ProblemLog:
    log = ProblemLog()
    app.add_middleware(DocumentedProblemsCheck, fastapi_app=app, log=log)
    return log
