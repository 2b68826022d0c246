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
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session

from pokna.api.auth import TenantDep
from pokna.api.deps import SessionDep, commit_now
from pokna.api.encoding import json_ready
from pokna.errors import InvalidRequest
from pokna.idempotency.service import Attempt, KeyedRequest, run_once

REPLAYED_HEADER = "Idempotent-Replayed"

Work = Callable[[Session], tuple[int, Any]]
"""The request's effects on the session; returns the status and the answer (a pydantic model, or plain
JSON-ready data)."""


class Idempotency:
    def __init__(self, session: Session, tenant_id: str, key: str | None, fingerprint: str) -> None:
        self.session = session
        self.tenant_id = tenant_id
        self.key = key
        self.fingerprint = fingerprint
        self.interrupted_at: datetime | None = None
        """Set before the work runs: when an earlier attempt under this key began that the service
        failed to finish (`pokna.idempotency.service.Attempt`)."""

    def run(self, work: Work) -> JSONResponse:
        """Call it before anything else touches the session: under a key, the claim's commit would take
        along whatever the route had written before."""
        if self.key is None:
            status, body = work(self.session)
            response = JSONResponse(json_ready(body), status_code=status)
            commit_now(self.session)  # here, in the route's thread, rather than once more through the pool
            return response

        def encoded_work(session: Session, attempt: Attempt) -> tuple[int, Any]:
            self.interrupted_at = attempt.interrupted_at
            status, body = work(session)
            return status, json_ready(body)

        request = KeyedRequest(tenant_id=self.tenant_id, key=self.key, fingerprint=self.fingerprint)
        outcome = run_once(self.session, request, encoded_work)
        response = JSONResponse(outcome.body, status_code=outcome.status)
        if outcome.replayed:
            response.headers[REPLAYED_HEADER] = "true"
        return response


def _normalize_key(raw: str | None) -> str | None:
    if raw is None:
        return None
    key = raw.strip()
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]
    if not 1 <= len(key) <= 255 or not key.isascii() or not key.isprintable():
        raise InvalidRequest(
            "Idempotency-Key must be 1-255 printable ASCII characters", field="header.Idempotency-Key"
        )
    return key


async def get_idempotency(
    request: Request,
    session: SessionDep,
    tenant_id: TenantDep,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            description="Makes the POST safe to retry: a retry with the same key and body returns the stored "
            "response and does nothing more. Quoted or unquoted; 1-255 printable ASCII characters.",
        ),
    ] = None,
) -> Idempotency:
    key = _normalize_key(idempotency_key)
    # Only a keyed request is ever compared with another; FastAPI has already read (and cached) the body.
    fingerprint = (
        "" if key is None else request_fingerprint(request.method, request.url.path, await request.body())
    )
    return Idempotency(session, tenant_id, key, fingerprint)


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
