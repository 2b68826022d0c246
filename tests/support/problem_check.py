"""Holds every problem the API answers in a test to the OpenAPI document: an ASGI middleware that notes
each problem+json answer whose (status, code) the matched operation does not declare.

The `client` fixture installs it, so every API test that uses the fixture checks the document as a side
effect, and fails (at teardown) on a code an operation answered without declaring it. Each test checks its
own answers, so nothing is shared between xdist workers.

The other way round, every declared problem must be produced by some test: each test leaves what its app
answered in a file of its own, and at the end of a run of the whole suite the controller (after every xdist
worker has finished) fails the run on any declared (operation, status, code) that no test produced.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pokna.api.problem_docs import BY_MECHANISM, PROBLEM_JSON


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

    def _route(self, scope: Scope) -> str | None:
        """The matched route's template; for an answer given before routing (the body-size limit, a
        repeated key, the rate limit), the document's path that the request's path fits."""
        route = getattr(scope.get("route"), "path", None)
        if route is None:
            for template in self.fastapi_app.openapi()["paths"]:
                if re.fullmatch(re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(template)), scope["path"]):
                    return str(template)
        return route

    def _check(self, scope: Scope, status: int, problem: dict[str, Any]) -> None:
        route = self._route(scope)
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


SEEN_DIR_ENV = "POKNA_PROBLEMS_SEEN_DIR"


def record_seen(log: ProblemLog, test_id: str) -> None:
    """Leave what this test's app answered where the run's controller collects it (one file per test, so
    xdist workers never write the same file)."""
    directory = os.environ.get(SEEN_DIR_ENV)
    if directory and log.seen:
        name = hashlib.sha256(test_id.encode()).hexdigest()[:24]
        (Path(directory) / f"{name}.json").write_text(json.dumps(log.seen))


def never_produced(directory: Path, document: dict[str, Any]) -> list[str]:
    """Every (operation, status, code) the document declares that no test's app answered, leaving out what
    problems one mechanism answers in front of every operation that has it (`BY_MECHANISM`: the handlers,
    an outage, the rate limiter, the repeated-key reader), which their own tests produce across
    operations."""
    seen: set[tuple[str, str, int, str]] = set()
    for path in directory.glob("*.json"):
        seen.update(
            (method, route, status, code) for method, route, status, code in json.loads(path.read_text())
        )
    shared = {(doc.status, doc.code) for doc in BY_MECHANISM}
    # What every operation declares (the body limit, the 500 handler) is produced by
    # tests/api/test_documented_problems.py for every operation; the rest of BY_MECHANISM by
    # tests/api/test_api_duplicate_keys.py, test_rate_limits.py and test_database_unavailable.py.
    missing: list[str] = []
    for route, item in document["paths"].items():
        for method, operation in item.items():
            for status, code in sorted(documented_codes(operation) - shared):
                if (method, route, status, code) not in seen:
                    missing.append(f"{method.upper()} {route} {status} {code}")
    return missing


def documented_codes(operation: dict[str, Any]) -> set[tuple[int, str]]:
    """(status, code) of every problem an operation of the OpenAPI document declares."""
    found: set[tuple[int, str]] = set()
    for status, response in operation.get("responses", {}).items():
        examples = response.get("content", {}).get(PROBLEM_JSON, {}).get("examples", {})
        found.update((int(status), example["value"]["code"]) for example in examples.values())
    return found
