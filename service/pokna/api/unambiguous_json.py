"""A JSON body that names a key twice is refused (400 `duplicate_key`), at any depth, for every route.

`json.loads` keeps the last of two equal keys, so `{"amount": 1, "amount": 7}` would deposit 7 while a
proxy, a log or the client's own audit trail that reads the first says 1. A money request must mean one
thing, so such a body is refused at the edge (`pokna.api.middleware.Edge`), once, before any route parses it.

The walk is the verifiers' (`pokna_verify.bounded_input.duplicate_key`): a document the service accepts is one
they read the same way."""

from __future__ import annotations

from starlette.types import Scope, Send

from pokna.api.asgi_problems import invalid_param, send_problem
from pokna_verify.bounded_input import duplicate_key


async def refuse_duplicate_key(scope: Scope, send: Send, body: bytes) -> bool:
    """Refuses (400 `duplicate_key`) a body that names a key twice; False if it does not."""
    repeated = duplicate_key(body) if body else None
    if repeated is None:
        return False
    param = invalid_param(("body", *repeated), "appears more than once")
    await send_problem(
        scope,
        send,
        status=400,
        code="duplicate_key",
        title="Duplicate key in JSON body",
        detail=f"{param['name']} appears more than once; send each key once",
        invalid_params=[param],
    )
    return True
