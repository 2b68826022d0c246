"""Problem+json answers sent by the ASGI middleware, before any route (and FastAPI's handlers) can run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from starlette.types import Scope, Send

PROBLEM_JSON = b"application/problem+json"


def invalid_param(location: Sequence[object], reason: str) -> dict[str, str]:
    """An `invalid_params` entry: the field's dotted name (`body.stake`), and its JSON Pointer (RFC 6901)
    within the request part the name starts with."""
    pointer = "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in location[1:])
    return {"name": ".".join(map(str, location)), "reason": reason, "pointer": pointer}


def problem_document(
    *, status: int, code: str, title: str, detail: str, instance: str, request_id: str | None, extensions: Any
) -> dict[str, Any]:
    """The RFC 9457 document, its fields in one order for the handlers, the middleware and the docs' examples.
    Keyword-only: `title` and `detail` are neighbouring strings, easy to swap."""
    return {
        "type": f"https://pokna.dev/problems/{code}",
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        "instance": instance,
        "request_id": request_id,
        **extensions,
    }


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
    """`pokna.api.problems.problem_response` for middleware that has no `Request`."""
    request_id = scope.get("state", {}).get("request_id")
    body = problem_document(
        status=status,
        code=code,
        title=title,
        detail=detail,
        instance=scope["path"],
        request_id=request_id,
        extensions=extensions,
    )
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
