"""Every query on idempotency records."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CursorResult, delete, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from pokna.db.models.idempotency import IdempotencyRecord

_LOCK_NOT_AVAILABLE = "55P03"


def lock_not_available(error: OperationalError) -> bool:
    """PostgreSQL refused a NOWAIT lock because another transaction holds the row."""
    return getattr(error.orig, "sqlstate", None) == _LOCK_NOT_AVAILABLE


def locked_record(session: Session, tenant_id: str, key: str, *, nowait: bool) -> IdempotencyRecord | None:
    """The record under a row lock (SQLite locks the whole database per transaction instead). Always
    re-read: one request session claims and later completes the same record, and the fencing check
    must see a token a retry wrote in between, not the copy the session already holds."""
    statement = (
        select(IdempotencyRecord)
        .where(IdempotencyRecord.tenant_id == tenant_id, IdempotencyRecord.key == key)
        .with_for_update(nowait=nowait)
        .execution_options(populate_existing=True)
    )
    return session.scalars(statement).one_or_none()


def add_record(session: Session, record: IdempotencyRecord) -> None:
    session.add(record)
    session.flush()


def delete_record(session: Session, record: IdempotencyRecord) -> None:
    session.delete(record)
    session.flush()


def delete_unfinished_claim(session: Session, tenant_id: str, key: str, claim_token: str) -> None:
    session.execute(
        delete(IdempotencyRecord).where(
            IdempotencyRecord.tenant_id == tenant_id,
            IdempotencyRecord.key == key,
            IdempotencyRecord.claim_token == claim_token,
            IdempotencyRecord.response_status.is_(None),
        )
    )


def delete_expired(session: Session, now: datetime) -> int:
    result = session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.expires_at <= now))
    assert isinstance(result, CursorResult)
    return result.rowcount or 0
