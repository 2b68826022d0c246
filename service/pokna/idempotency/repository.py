"""Every query on idempotency records."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, Table, bindparam, delete, select, text, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from pokna.db.models.idempotency import IdempotencyRecord
from pokna.db.sqlstates import LOCK_NOT_AVAILABLE, sqlstate_of

_record = cast(Table, IdempotencyRecord.__table__)
_CLAIM_COLUMNS = ("tenant_id", "key", "request_fingerprint", "claim_token", "created_at", "expires_at")

# A claim is one statement: the key is taken, or it was already there (ON CONFLICT DO NOTHING).
_INSERT_CLAIM = text(
    f"INSERT INTO idempotency_record ({', '.join(_CLAIM_COLUMNS)}) "  # noqa: S608
    f"VALUES ({', '.join(':' + name for name in _CLAIM_COLUMNS)}) "
    "ON CONFLICT (tenant_id, key) DO NOTHING RETURNING key"
).bindparams(*(bindparam(name, type_=_record.c[name].type) for name in _CLAIM_COLUMNS))

_HELD = (
    select(_record.c.claim_token, _record.c.created_at)
    .where(_record.c.tenant_id == bindparam("tenant_id"), _record.c.key == bindparam("key"))
    .with_for_update()
)
_STORE_RESPONSE = (
    update(_record)
    .where(_record.c.tenant_id == bindparam("of_tenant"), _record.c.key == bindparam("of_key"))
    .values(response_status=bindparam("status"), response_body=bindparam("body"), locked_until=None)
)


def lock_not_available(error: OperationalError) -> bool:
    """PostgreSQL refused a NOWAIT lock because another transaction holds the row."""
    return sqlstate_of(error) == LOCK_NOT_AVAILABLE


def locked_record(session: Session, tenant_id: str, key: str, *, nowait: bool) -> IdempotencyRecord | None:
    """The record under a row lock. Always
    re-read: one request session claims and later completes the same record, and the fencing check
    must see a token a retry wrote in between, not the copy the session already holds."""
    statement = (
        select(IdempotencyRecord)
        .where(IdempotencyRecord.tenant_id == tenant_id, IdempotencyRecord.key == key)
        .with_for_update(nowait=nowait)
        .execution_options(populate_existing=True)
    )
    return session.scalars(statement).one_or_none()


def insert_claim(session: Session, values: dict[str, Any]) -> bool:
    """A new claim in one statement, or False (nothing written, nothing raised) when the tenant already
    has a record under that key: then the caller reads it under a lock."""
    return session.execute(_INSERT_CLAIM, values).first() is not None


def held_claim(session: Session, tenant_id: str, key: str) -> tuple[str, Any] | None:
    """The claim's token and first moment, locked until the transaction ends (Core: no ORM object)."""
    row = session.connection().execute(_HELD, {"tenant_id": tenant_id, "key": key}).first()
    return None if row is None else (row.claim_token, row.created_at)


def store_response(session: Session, tenant_id: str, key: str, status: int, body: str) -> None:
    session.connection().execute(
        _STORE_RESPONSE, {"of_tenant": tenant_id, "of_key": key, "status": status, "body": body}
    )


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


def delete_expired(session: Session, now: datetime, tenant_id: str | None = None) -> int:
    statement = delete(IdempotencyRecord).where(IdempotencyRecord.expires_at <= now)
    if tenant_id is not None:
        statement = statement.where(IdempotencyRecord.tenant_id == tenant_id)
    result = session.execute(statement)
    assert isinstance(result, CursorResult)
    return result.rowcount or 0
