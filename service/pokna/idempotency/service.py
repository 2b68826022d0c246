"""Exactly-once requests under an idempotency key, safe across any number of stateless processes.

All of it runs on the caller's one session (for HTTP, the request's), in three transactions:

1. `claim` the key in a short transaction of its own (a record keyed by tenant and key, carrying a fresh
   claim token) and commit it, so that a concurrent retry finds it before the work is done: same request
   still running -> `IdempotencyRequestInProgress`; different request -> `IdempotencyKeyReused`.
   This is the one commit that cannot wait for the end of the request: a claim nobody else can see does
   not stop a retry from doing the work a second time.
2. Do the work: first lock the claim and check the token is still ours (`hold`), keep that lock to the
   end, and `store_response` on the claim in the same transaction, which is committed here as well. The
   response is stored exactly when the work's effects are committed.
3. If the work or its commit fails, roll back and `release` the claim: nothing was committed, so the
   client may retry. Committing here rather than leaving it to whoever opened the session is what lets a
   commit that fails (a deferred constraint, a lost connection) release the claim too.

A claim is live exactly while its holder's transaction holds the record locked (step 2): a row lock,
which dies with the holder: a killed process, a lost connection or a
restarted database ends its transaction and frees the lock at once. So a retry that finds an unfinished
claim it can lock takes it over at once, with a new token; there is no wall-clock lease to wait out. A
retry that cannot lock it (NOWAIT) is told the request is in progress. Between the claim's commit and `hold` a
live request holds no lock: a retry arriving in that moment takes over, and the first request, its token
no longer matching, is refused with `IdempotencyRequestInProgress` and does nothing, so the work is still
done once. The claim records when the first attempt began; a retry that takes over an interrupted attempt
is told when (`Attempt.interrupted_at`), so the work can act as of then (a game's turn deadline does not
run out on a seat whose action was in flight when the service failed). Records are kept for 24 hours;
`purge_expired` (`pokna sweep`) deletes them after.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from pokna.db.models.idempotency import IdempotencyRecord
from pokna.db.types import utc_now
from pokna.errors import IdempotencyKeyReused, IdempotencyRequestInProgress
from pokna.idempotency import repository

RETENTION = timedelta(hours=24)
IN_PROGRESS = "the first request with this key is still being processed"
_CLAIM_ATTEMPTS = 3

log = logging.getLogger("pokna.idempotency")


@dataclass(frozen=True)
class KeyedRequest:
    tenant_id: str
    key: str
    fingerprint: str
    """Tells a retry of the same request from another request under the same key."""


@dataclass(frozen=True)
class Outcome:
    status: int
    body: Any
    """JSON-ready: what was sent the first time, and what every replay sends again."""
    replayed: bool


@dataclass(frozen=True)
class Attempt:
    interrupted_at: datetime | None
    """When an earlier attempt under this key began that the service failed to finish (its process died,
    its connection or the database went away), or None when this is the first attempt."""


Work = Callable[[Session, Attempt], tuple[int, Any]]
"""The request's effects on the session; returns the status and a JSON-ready body."""


def run_once(session: Session, request: KeyedRequest, work: Work) -> Outcome:
    """Do `work` once for `request`, or give back the outcome of the time it was done."""
    token = secrets.token_hex(16)
    started_at = utc_now()
    stored = claim(session, request, token)
    if stored is not None:
        return stored
    try:
        first_at = hold(session, request, token)
        status, body = work(session, Attempt(interrupted_at=first_at if first_at < started_at else None))
        store_response(session, request, status, body)
        session.commit()
    except BaseException:
        session.rollback()
        _release_after_failure(session, request, token)
        raise
    return Outcome(status=status, body=body, replayed=False)


def claim(session: Session, request: KeyedRequest, token: str) -> Outcome | None:
    """Claim the key for `token` and commit; or the stored outcome when the same request already ran."""
    for _attempt in range(_CLAIM_ATTEMPTS):
        try:
            stored = _claim_in(session, request, token, utc_now())
            session.commit()
            return stored
        except IntegrityError:
            session.rollback()
            continue  # a concurrent request inserted the same key first: read what it stored
        except OperationalError as error:
            session.rollback()
            if repository.lock_not_available(error):  # the first request is running and holds its claim
                raise IdempotencyRequestInProgress(IN_PROGRESS) from None
            raise
    raise IdempotencyRequestInProgress(IN_PROGRESS)


def _claim_in(session: Session, request: KeyedRequest, token: str, now: datetime) -> Outcome | None:
    # The usual case, a new key, in one statement; a key seen before is read under a lock (NOWAIT).
    claim_values = {
        "tenant_id": request.tenant_id,
        "key": request.key,
        "request_fingerprint": request.fingerprint,
        "claim_token": token,
        "created_at": now,
        "expires_at": now + RETENTION,
    }
    if repository.insert_claim(session, claim_values):
        return None
    record = repository.locked_record(session, request.tenant_id, request.key, nowait=True)
    if record is not None and record.expires_at <= now:
        repository.delete_record(session, record)
        record = None
    if record is None:
        repository.add_record(
            session,
            IdempotencyRecord(
                tenant_id=request.tenant_id,
                key=request.key,
                request_fingerprint=request.fingerprint,
                claim_token=token,
                created_at=now,
                locked_until=None,
                expires_at=now + RETENTION,
            ),
        )
        return None
    if record.request_fingerprint != request.fingerprint:
        raise IdempotencyKeyReused(
            "this Idempotency-Key was used with a different request; use a new key for a new request",
            invalid_params=[
                {"name": "header.Idempotency-Key", "reason": "reused", "pointer": "/Idempotency-Key"}
            ],
        )
    if record.response_status is not None and record.response_body is not None:
        return Outcome(status=record.response_status, body=json.loads(record.response_body), replayed=True)
    # Unfinished, and locked by us: nobody is working on it (its holder died, or is between its claim
    # and `hold`, where taking over is safe too). The first attempt's moment stays on the record.
    record.claim_token = token
    record.locked_until = None
    session.flush()
    return None


def hold(session: Session, request: KeyedRequest, token: str) -> datetime:
    """Lock the claim until the work's transaction ends; refuse if a retry has taken it over. Returns
    when the first attempt under this key began."""
    held = repository.held_claim(session, request.tenant_id, request.key)
    if held is None or held[0] != token:
        raise IdempotencyRequestInProgress("a retry with this key took over; it is being processed")
    first_at: datetime = held[1]
    return first_at


def store_response(session: Session, request: KeyedRequest, status: int, body: Any) -> None:
    """ASCII-escaped JSON, so any text the body holds (even NUL) fits a PostgreSQL text column. The
    claim is held (locked) by this transaction."""
    encoded = json.dumps(body, separators=(",", ":"))
    repository.store_response(session, request.tenant_id, request.key, status, encoded)


def release(session: Session, request: KeyedRequest, token: str) -> None:
    """Free a claim this token holds and never completed, so the client may retry."""
    repository.delete_unfinished_claim(session, request.tenant_id, request.key, token)


def _release_after_failure(session: Session, request: KeyedRequest, token: str) -> None:
    """The work's own error is what the caller must see; should the release fail as well (the database
    went away), the claim stays unfinished and unlocked, and a retry takes it over."""
    try:
        release(session, request, token)
        session.commit()
    except SQLAlchemyError as error:  # not its text: it carries the statement's parameters
        session.rollback()
        log.warning("could not release idempotency key %r (%s)", request.key, type(error).__name__)


def purge_expired(session: Session, now: datetime, tenant_id: str | None = None) -> int:
    """Delete records past their retention (the tenant's only, when one is named: `pokna sweep` goes
    tenant by tenant); returns how many."""
    return repository.delete_expired(session, now, tenant_id)
