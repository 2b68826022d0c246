"""Exactly-once POSTs with `Idempotency-Key`, safe across any number of stateless processes.

1. Claim the key in its own short transaction (a row keyed by tenant and key, carrying a fresh claim
   token and a lease), so a concurrent retry finds it: same request still running -> 409; different
   request -> 422.
2. Run the request's unit of work, which first locks the claim row and checks the token is still its
   own, holds that lock to the end, and stores the response on the claim in the same transaction. The
   response is stored exactly when the request's effects are committed.
3. If the work fails, release the claim: nothing was committed, so the client may retry.
A running request holds its claim locked, so a retry cannot take it over however slow the request is.
A claim nobody holds and whose lease ran out belonged to a process that died: a retry takes it over
with a new token, and should the old request wake up after all, its token no longer matches and its
work is rolled back. Records are kept for 24 hours.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from datetime import timedelta
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.responses import JSONResponse
from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from pokna.api.auth import TenantDep
from pokna.api.deps import RuntimeDep
from pokna.api.encoding import json_ready
from pokna.db.engine import unit_of_work
from pokna.db.models.idempotency import IdempotencyRecord
from pokna.db.types import utc_now
from pokna.errors import IdempotencyKeyReused, IdempotencyRequestInProgress, InvalidRequest
from pokna.runtime import Runtime

RETENTION = timedelta(hours=24)
LEASE = timedelta(seconds=60)
REPLAYED_HEADER = "Idempotent-Replayed"
IN_PROGRESS = "the first request with this key is still being processed"
_LOCK_NOT_AVAILABLE = "55P03"


def _lock_not_available(error: OperationalError) -> bool:
    return getattr(error.orig, "sqlstate", None) == _LOCK_NOT_AVAILABLE


Work = Callable[[Session], tuple[int, Any]]


class Idempotency:
    def __init__(self, runtime: Runtime, tenant_id: str, key: str | None, fingerprint: str) -> None:
        self.runtime = runtime
        self.tenant_id = tenant_id
        self.key = key
        self.fingerprint = fingerprint

    def run(self, work: Work) -> JSONResponse:
        if self.key is None:
            with unit_of_work(self.runtime.sessions) as session:
                status, body = work(session)
            return JSONResponse(json_ready(body), status_code=status)
        token = secrets.token_hex(16)
        replay = self._claim(token)
        if replay is not None:
            return replay
        try:
            with unit_of_work(self.runtime.sessions) as session:
                record = session.get(IdempotencyRecord, (self.tenant_id, self.key), with_for_update=True)
                if record is None or record.claim_token != token:
                    raise IdempotencyRequestInProgress(
                        "a retry with this key took over; it is being processed"
                    )
                status, body = work(session)
                encoded = json_ready(body)
                record.response_status = status
                record.response_body = json.dumps(encoded, separators=(",", ":"))
                record.locked_until = None
        except BaseException:
            self._release()
            raise
        return JSONResponse(encoded, status_code=status)

    def _claim(self, token: str) -> JSONResponse | None:
        for _attempt in range(3):
            try:
                with unit_of_work(self.runtime.sessions) as session:
                    return self._claim_in(session, token)
            except IntegrityError:
                continue  # a concurrent request inserted the same key first: read what it stored
            except OperationalError as error:
                if _lock_not_available(error):  # the first request is running and holds its claim
                    raise IdempotencyRequestInProgress(IN_PROGRESS) from None
                raise
        raise IdempotencyRequestInProgress(IN_PROGRESS)

    def _claim_in(self, session: Session, token: str) -> JSONResponse | None:
        now = utc_now()
        record = session.get(IdempotencyRecord, (self.tenant_id, self.key), with_for_update={"nowait": True})
        if record is not None and record.expires_at <= now:
            session.delete(record)
            session.flush()
            record = None
        if record is None:
            session.add(
                IdempotencyRecord(
                    tenant_id=self.tenant_id,
                    key=self.key,
                    request_fingerprint=self.fingerprint,
                    claim_token=token,
                    created_at=now,
                    locked_until=now + LEASE,
                    expires_at=now + RETENTION,
                )
            )
            session.flush()
            return None
        if record.request_fingerprint != self.fingerprint:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was used with a different request; use a new key for a new request",
                invalid_params=[
                    {"name": "header.Idempotency-Key", "reason": "reused", "pointer": "/Idempotency-Key"}
                ],
            )
        if record.response_status is not None and record.response_body is not None:
            response = JSONResponse(json.loads(record.response_body), status_code=record.response_status)
            response.headers[REPLAYED_HEADER] = "true"
            return response
        if record.locked_until is not None and record.locked_until > now:
            raise IdempotencyRequestInProgress(IN_PROGRESS)
        record.claim_token = token  # nobody holds the claim and its lease ran out: its process died
        record.locked_until = now + LEASE
        return None

    def _release(self) -> None:
        with unit_of_work(self.runtime.sessions) as session:
            session.execute(
                delete(IdempotencyRecord).where(
                    IdempotencyRecord.tenant_id == self.tenant_id,
                    IdempotencyRecord.key == self.key,
                    IdempotencyRecord.response_status.is_(None),
                )
            )


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
    runtime: RuntimeDep,
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
    raw = await request.body()
    try:
        canonical = (
            json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":")).encode() if raw else b""
        )
    except ValueError:
        canonical = raw
    fingerprint = hashlib.sha256(
        request.method.encode() + b" " + request.url.path.encode() + b"\n" + canonical
    )
    return Idempotency(runtime, tenant_id, _normalize_key(idempotency_key), fingerprint.hexdigest())


IdempotencyDep = Annotated[Idempotency, Depends(get_idempotency)]
