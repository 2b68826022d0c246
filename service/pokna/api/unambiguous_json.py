"""A JSON body that names a key twice is refused (400 `duplicate_key`), at any depth, for every route.

`json.loads` keeps the last of two equal keys, so `{"amount": 1, "amount": 7}` would deposit 7 while a
proxy, a log or the client's own audit trail that reads the first says 1. A money request must mean one
thing, so such a body is refused at the edge (`pokna.api.middleware.Edge`), once, before any route parses it."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Scope, Send

from pokna.api.asgi_problems import send_problem


class _Members(list[tuple[str, Any]]):
    """A JSON object as the members it was written with, duplicates and all."""


def duplicate_key(body: bytes) -> tuple[str | int, ...] | None:
    """Where the first repeated key is (the key last), or None if the body is unambiguous or not JSON at all
    (FastAPI refuses a body that is not JSON with its own 400)."""
    try:
        document = json.loads(body, object_pairs_hook=_Members)
    except (ValueError, RecursionError):
        return None
    pending: list[tuple[tuple[str | int, ...], Any]] = [((), document)]
    while pending:
        location, node = pending.pop()
        if isinstance(node, _Members):
            seen: set[str] = set()
            for key, value in node:
                if key in seen:
                    return (*location, key)
                seen.add(key)
                pending.append(((*location, key), value))
        elif isinstance(node, list):
            pending.extend(((*location, index), value) for index, value in enumerate(node))
    return None


async def refuse_duplicate_key(scope: Scope, send: Send, body: bytes) -> bool:
    """Refuses (400 `duplicate_key`) a body that names a key twice; False if it does not."""
    repeated = duplicate_key(body) if body else None
    if repeated is None:
        return False
    name = ".".join(str(part) for part in ("body", *repeated))
    pointer = "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in repeated)
    await send_problem(
        scope,
        send,
        status=400,
        code="duplicate_key",
        title="Duplicate key in JSON body",
        detail=f"{name} appears more than once; send each key once",
        invalid_params=[{"name": name, "reason": "appears more than once", "pointer": pointer}],
    )
    return True
