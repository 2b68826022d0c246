"""`pokna.idempotency.keyed` below the domains, on real PostgreSQL: the keyed transaction every POST on the
driver writes in. The answer stored in the transaction is replayed without the work; a failure releases
the claim and writes nothing; a refusal the domain names is its error on a connection left open, any other
database error closes the connection. (Through HTTP, per route: tests/api/test_api_idempotency.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg
import pytest
from psycopg import AsyncConnection
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.idempotency import IdempotencyRecord
from pokna.idempotency import service
from pokna.idempotency.keyed import Answer, Caller, Claim, Keyed, keyed, transaction
from pokna.runtime import Runtime
from support.driver import create_tenant
from support.sessions import unit_of_work

T = TypeVar("T")
SENT = Keyed("k", "f" * 64)
BODY = '{"paid":5}'
DIVISION_BY_ZERO = psycopg.errors.DivisionByZero.sqlstate or ""


class Refused(Exception):
    """What a domain names a refusal of its writes as, here the server's division by zero."""


@pytest.fixture
def tenant_id(sessions: sessionmaker[Session]) -> str:
    return create_tenant(sessions, "Chalmun's").id


def _on_driver(runtime: Runtime, use: Callable[[AsyncConnection[Any]], Awaitable[T]]) -> T:
    async def run() -> T:
        async with runtime.aio.connection() as connection:
            return await use(connection)

    return asyncio.run(run())


def _claims(sessions: sessionmaker[Session]) -> dict[str, int | None]:
    with unit_of_work(sessions) as session:
        return {row.key: row.response_status for row in session.scalars(select(IdempotencyRecord))}


def test_the_answer_stored_in_the_transaction_is_replayed_without_the_work(
    runtime: Runtime, sessions: sessionmaker[Session], tenant_id: str
) -> None:
    worked: list[str] = []

    async def twice(connection: AsyncConnection[Any]) -> list[Answer]:
        async def work(caller: Caller, claim: Claim | None) -> Answer:
            assert claim is not None
            assert caller.tenant_id == tenant_id
            async with transaction(connection, caller, claim) as opened:
                one = await opened.read(lambda tenant: connection.execute("SELECT 1"))
                assert await one.fetchone() == (1,)
                stored = {"tenant_id": opened.tenant, "key": claim.key, "status": 201, "body": BODY}
                await connection.execute(service.STORE_RESPONSE, stored)
            worked.append(claim.key)
            return Answer(201, BODY.encode(), replayed=False)

        return [await keyed(connection, Caller(tenant_id=tenant_id), SENT, work) for _ in range(2)]

    first, replay = _on_driver(runtime, twice)
    assert first == Answer(201, BODY.encode(), replayed=False)
    assert replay == Answer(201, BODY.encode(), replayed=True)
    assert worked == ["k"]
    assert _claims(sessions) == {"k": 201}


@pytest.mark.parametrize("named", [True, False], ids=["named", "unnamed"])
def test_a_failed_write_releases_the_claim_and_a_named_refusal_keeps_the_connection(
    runtime: Runtime, sessions: sessionmaker[Session], tenant_id: str, named: bool
) -> None:
    refusals = {DIVISION_BY_ZERO: lambda error: Refused(str(error))} if named else {}

    async def fail(connection: AsyncConnection[Any]) -> None:
        async def work(caller: Caller, claim: Claim | None) -> None:
            async with transaction(connection, caller, claim, refusals) as opened:
                await opened.read(lambda tenant: connection.execute("SELECT 1"))
                stored = {"tenant_id": opened.tenant, "key": SENT.key, "status": 201, "body": BODY}
                await connection.execute(service.STORE_RESPONSE, stored)
                await connection.execute("SELECT 1 / 0")  # refused with COMMIT behind it

        with pytest.raises(Refused if named else psycopg.errors.DivisionByZero):
            await keyed(connection, Caller(tenant_id=tenant_id), SENT, work)
        assert connection.closed is not named
        if named:
            assert connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    _on_driver(runtime, fail)
    # Nothing stored. A refusal releases the claim; a closed connection cannot, and leaves it unfinished and
    # unlocked, which a retry takes over at once (tests/idempotency/test_idempotency_service.py).
    assert _claims(sessions) == ({} if named else {"k": None})


def test_a_refusal_leaves_no_statement_the_connection_cannot_run(runtime: Runtime, tenant_id: str) -> None:
    """psycopg (3.3.9) prepares a statement at its sixth execution on a connection. In a pipeline refused
    at a statement before it, the server skips its Parse but psycopg remembers it as prepared, and every
    later execution of it there fails (`prepared statement "_pg3_N" does not exist`; for a connection an
    error ends the request on: tests/db/test_pool_checkout.py). A refusal keeps its connection, and its
    rollback makes psycopg forget what it prepared. A ROLLBACK sent as a statement did so only when psycopg
    saw that text for the first time with something prepared: here the first refusal comes before."""
    refusals = {DIVISION_BY_ZERO: lambda error: Refused(str(error))}

    async def rounds(connection: AsyncConnection[Any]) -> int:
        async def once(divisor: int) -> int:
            async with transaction(connection, Caller(tenant_id=tenant_id), None, refusals) as opened:
                await opened.read(lambda tenant: connection.execute("SELECT 1"))
                await connection.execute("SELECT 1 / %(divisor)s", {"divisor": divisor})
                after = await connection.execute("SELECT length(%(text)s::text)", {"text": "Vigo"})
            row = await after.fetchone()
            assert row is not None
            return int(row[0])

        with pytest.raises(Refused):  # a ROLLBACK while nothing is prepared
            await once(0)
        for _ in range(5):  # the refused round's two last statements were not counted
            await once(1)
        with pytest.raises(Refused):
            await once(0)  # their sixth execution: psycopg prepares them here
        assert not connection.closed
        return await once(1)

    assert _on_driver(runtime, rounds) == 4
