"""`pokna.idempotency.service` below HTTP, on the driver as every keyed request uses it: claims, replays,
fencing, release and purge. (Through HTTP, on every kind of keyed route: tests/api/test_api_idempotency.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import pytest
from psycopg import AsyncConnection
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.idempotency import IdempotencyRecord
from pokna.db.types import utc_now
from pokna.errors import IdempotencyKeyReused, IdempotencyRequestInProgress
from pokna.idempotency import service
from pokna.runtime import Runtime
from support.driver import create_tenant
from support.sessions import unit_of_work

T = TypeVar("T")
FINGERPRINT = "f" * 64


@pytest.fixture
def tenant_id(sessions: sessionmaker[Session]) -> str:
    return create_tenant(sessions, "Chalmun's").id


def _on_driver(runtime: Runtime, use: Callable[[AsyncConnection[Any]], Awaitable[T]]) -> T:
    async def run() -> T:
        async with runtime.aio.connection() as connection:
            return await use(connection)

    return asyncio.run(run())


def _claim(
    runtime: Runtime, tenant_id: str, key: str, token: str, fingerprint: str = FINGERPRINT
) -> service.Answer | None:
    async def claim(connection: AsyncConnection[Any]) -> service.Answer | None:
        claimed = await service.authenticate_and_claim(
            connection, None, tenant_id, key, fingerprint, token, utc_now()
        )
        return claimed.stored

    return _on_driver(runtime, claim)


def _finish(runtime: Runtime, tenant_id: str, key: str, token: str, body: str) -> datetime:
    """The work's transaction: hold the claim, store the answer, commit; when the first attempt began."""

    async def finish(connection: AsyncConnection[Any]) -> datetime:
        params = {"tenant_id": tenant_id, "key": key}
        async with connection.transaction():
            held = await (await connection.execute(service.HOLD, params)).fetchone()
            first_at = service.held_claim(held, token)
            await connection.execute(service.STORE_RESPONSE, {**params, "status": 201, "body": body})
        return first_at

    return _on_driver(runtime, finish)


def _release(runtime: Runtime, tenant_id: str, key: str, token: str) -> None:
    async def release(connection: AsyncConnection[Any]) -> None:
        await service.release(connection, tenant_id, key, token)

    _on_driver(runtime, release)


def _records(sessions: sessionmaker[Session]) -> dict[str, tuple[str, int | None]]:
    with unit_of_work(sessions) as session:
        rows = session.scalars(select(IdempotencyRecord)).all()
        return {row.key: (row.claim_token, row.response_status) for row in rows}


def test_a_finished_request_is_replayed_and_its_key_refused_for_another(
    runtime: Runtime, tenant_id: str
) -> None:
    body = '{"id":"acct_1","note":"caf\\u00e9 \\u0000"}'  # as stored: ASCII-escaped JSON text
    assert _claim(runtime, tenant_id, "k", "first") is None
    _finish(runtime, tenant_id, "k", "first", body)
    again = _claim(runtime, tenant_id, "k", "second")
    assert again == service.Answer(status=201, body=body.encode(), replayed=True)
    with pytest.raises(IdempotencyKeyReused):
        _claim(runtime, tenant_id, "k", "third", fingerprint="0" * 64)


def test_a_claim_nobody_holds_is_taken_over_at_once_and_fences_the_old_token_out(
    runtime: Runtime, sessions: sessionmaker[Session], tenant_id: str
) -> None:
    assert _claim(runtime, tenant_id, "k", "old-token") is None
    # The old request died before its work committed (or has not reached its hold yet): no lock on the
    # claim, so a retry takes it over now, not after a lease.
    assert _claim(runtime, tenant_id, "k", "new-token") is None
    with pytest.raises(IdempotencyRequestInProgress):
        _finish(runtime, tenant_id, "k", "old-token", "{}")
    _release(runtime, tenant_id, "k", "old-token")  # the old request's release frees nothing of the new
    assert _records(sessions) == {"k": ("new-token", None)}
    _release(runtime, tenant_id, "k", "new-token")
    assert _records(sessions) == {}


def test_a_claim_held_by_a_running_request_is_in_progress(runtime: Runtime, tenant_id: str) -> None:
    assert _claim(runtime, tenant_id, "k", "running") is None

    async def while_held(connection: AsyncConnection[Any]) -> None:
        async with connection.transaction():
            await connection.execute(service.HOLD, {"tenant_id": tenant_id, "key": "k"})
            async with runtime.aio.connection() as retry:
                with pytest.raises(IdempotencyRequestInProgress):  # NOWAIT: refused, not waiting
                    await service.authenticate_and_claim(
                        retry, None, tenant_id, "k", FINGERPRINT, "retry", utc_now()
                    )

    _on_driver(runtime, while_held)


def test_a_retry_of_an_interrupted_attempt_is_told_when_it_began(
    runtime: Runtime, sessions: sessionmaker[Session], tenant_id: str
) -> None:
    assert _claim(runtime, tenant_id, "fresh", "token") is None
    assert _finish(runtime, tenant_id, "fresh", "token", "{}") > utc_now() - timedelta(minutes=1)
    began = utc_now() - timedelta(seconds=7)
    assert _claim(runtime, tenant_id, "cut", "dead-token") is None  # claimed 7 s ago, then its process died
    with unit_of_work(sessions) as session:
        session.execute(
            update(IdempotencyRecord).where(IdempotencyRecord.key == "cut").values(created_at=began)
        )
    assert _claim(runtime, tenant_id, "cut", "retry-token") is None
    assert _finish(runtime, tenant_id, "cut", "retry-token", "{}") == began
    assert _records(sessions)["cut"] == ("retry-token", 201)


def test_purge_deletes_only_the_tenant_s_records_past_their_retention(
    runtime: Runtime, sessions: sessionmaker[Session], tenant_id: str
) -> None:
    other = create_tenant(sessions, "Docking Bay 94").id
    for tenant, key in ((tenant_id, "old"), (tenant_id, "new"), (other, "other-old")):
        assert _claim(runtime, tenant, key, "token") is None
        _finish(runtime, tenant, key, "token", "{}")
    with unit_of_work(sessions) as session:
        session.execute(
            update(IdempotencyRecord)
            .where(IdempotencyRecord.key.in_(["old", "other-old"]))
            .values(expires_at=utc_now() - timedelta(seconds=1))
        )
    assert (
        _on_driver(runtime, lambda connection: service.purge_expired(connection, utc_now(), tenant_id)) == 1
    )
    assert set(_records(sessions)) == {"new", "other-old"}
