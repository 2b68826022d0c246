"""`Idempotency-Key` on POSTs: the HTTP side of `pokna.idempotency`.

This module only reads the header, fingerprints the request (method, path and the body's JSON with its
keys sorted, so a retry spelled differently is the same request) and shapes the response; what a claim
is, when it is committed and when it is released is `pokna.idempotency.service`'s to decide (its
docstring states the guarantees). The work runs on the request's session (`SessionDep`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Header, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from sqlalchemy.orm import Session

from pokna.api.auth import TenantDep
from pokna.api.deps import SessionDep
from pokna.api.encoding import json_ready
from pokna.idempotency.service import Attempt, KeyedRequest, run_once

REPLAYED_HEADER = "Idempotent-Replayed"

_KEY = r"[!-~](?:[ -~]{0,253}[!-~])?"
IDEMPOTENCY_KEY_PATTERN = rf'^(?:{_KEY}|"{_KEY}")$'
"""1-255 printable ASCII characters, not starting or ending with a space, optionally in double quotes:
exactly what is accepted."""

Answer = TypeVar("Answer", bound=BaseModel)
Work = Callable[[Session], tuple[int, Answer]]
"""The request's effects on the session; returns the status and the documented answer."""


class Idempotency:
    def __init__(
        self, session: Session, tenant_id: str, key: str | None, fingerprint: str, response: Response
    ) -> None:
        self.session = session
        self.tenant_id = tenant_id
        self.key = key
        self.fingerprint = fingerprint
        self.response = response
        self.interrupted_at: datetime | None = None
        """Set before the work runs: when an earlier attempt under this key began that the service
        failed to finish (`pokna.idempotency.service.Attempt`)."""

    def run(self, work: Work[Answer], answer: type[Answer]) -> Answer:
        """The answer, as the route's documented model: the first time as the work built it, on a replay
        as stored, read back into the same model (so a replay is checked against the document too).

        Call it before anything else touches the session: under a key, the claim's commit would take
        along whatever the route had written before."""
        if self.key is None:
            status, body = work(self.session)  # `SessionDep` commits before sending
            self.response.status_code = status
            return body

        def encoded_work(session: Session, attempt: Attempt) -> tuple[int, Any]:
            self.interrupted_at = attempt.interrupted_at
            status, body = work(session)
            return status, json_ready(body)

        request = KeyedRequest(tenant_id=self.tenant_id, key=self.key, fingerprint=self.fingerprint)
        outcome = run_once(self.session, request, encoded_work)
        self.response.status_code = outcome.status
        if outcome.replayed:
            self.response.headers[REPLAYED_HEADER] = "true"
        return answer.model_validate(outcome.body)


def _unquoted(key: str | None) -> str | None:
    """A key sent quoted (`"abc"`) is the same key as `abc`; the header's schema already checked it."""
    if key is not None and len(key) > 2 and key[0] == key[-1] == '"':
        return key[1:-1]
    return key


async def get_idempotency(
    request: Request,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            description="Makes the POST safe to retry: a retry with the same key and body returns the stored "
            "response and does nothing more. 1-255 printable ASCII characters, not starting or ending with a "
            'space; a key sent in double quotes is the same key unquoted, and an empty or blank one (`""`) is '
            "refused.",
            pattern=IDEMPOTENCY_KEY_PATTERN,
            examples=["order-7f3c2a"],
        ),
    ] = None,
) -> Idempotency:
    key = _unquoted(idempotency_key)
    if key is not None and not key.strip(' "'):
        # `""` or `" "` fit the header's pattern as keys of their own, but mean none: refused like any
        # other key the pattern refuses, naming the header.
        raise RequestValidationError(
            [
                {
                    "type": "string_pattern_mismatch",
                    "loc": ("header", "Idempotency-Key"),
                    "msg": "an empty or blank key; send 1-255 printable ASCII characters",
                    "input": idempotency_key,
                }
            ]
        )
    # Only a keyed request is ever compared with another; FastAPI has already read (and cached) the body.
    fingerprint = (
        "" if key is None else request_fingerprint(request.method, request.url.path, await request.body())
    )
    return Idempotency(session, tenant_id, key, fingerprint, response)


def request_fingerprint(method: str, path: str, raw_body: bytes) -> str:
    """What tells a retry of the same request from another request under the same key."""
    try:
        canonical = (
            json.dumps(json.loads(raw_body), sort_keys=True, separators=(",", ":")).encode()
            if raw_body
            else b""
        )
    except ValueError:
        canonical = raw_body
    return hashlib.sha256(method.encode() + b" " + path.encode() + b"\n" + canonical).hexdigest()


IdempotencyDep = Annotated[Idempotency, Depends(get_idempotency)]
