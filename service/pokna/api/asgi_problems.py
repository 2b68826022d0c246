"""Problem+json answers sent by the ASGI middleware, before any route (and FastAPI's handlers) can run."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Scope, Send

PROBLEM_JSON = b"application/problem+json"


async def send_problem(
    scope: Scope,
    send: Send,
    *,
    status: int,
    code: str,
    title: str,
    detail: str,
    headers: dict[str, str] | None = None,
    **extensions: Any,
) -> None:
    """The same document `pokna.api.problems.problem_response` makes, for middleware that has no `Request`."""
    body: dict[str, Any] = {
        "type": f"https://pokna.dev/problems/{code}",
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        "instance": scope["path"],
        "request_id": scope.get("state", {}).get("request_id"),
        **extensions,
    }
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM_JSON),
                (b"content-length", str(len(payload)).encode()),
                *((name.lower().encode(), value.encode()) for name, value in (headers or {}).items()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
