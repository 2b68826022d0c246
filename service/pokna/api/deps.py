"""Request-scoped dependencies: the runtime, and the request's one session.

The session is the request's unit of work, the HTTP form of `pokna.db.engine.unit_of_work` (which commands
and the sweep use): commit if the request succeeds, roll back if it raises, never half-written. It is
opened and committed here, never by a route or a service (services `flush()`). Authentication reads through
it too, so a request checks out one connection, and a read-only request ends with COMMIT (psycopg discards
its prepared statements on ROLLBACK).

When the commit happens matters. FastAPI 0.165 ends a `yield` dependency of the default scope
("request") only after the response has been sent (`fastapi.routing.request_response` sends inside the
request exit stack, after the function exit stack has closed). A commit there could fail after the
client already holds a 2xx for work that never happened. So the commit is a `scope="function"`
dependency: FastAPI runs its exit code after the route and the serialization of its answer, before a
byte is sent; a commit that fails becomes the 500 problem instead (tests/api/test_request_session.py).

The session itself is opened and finally closed by a request-scoped dependency under it, which ends
once the response has been sent. (The streamed answers, the ledger export and the audit bundle, read on
the async road instead: pokna.api.auth `StreamingTenantDep`, pokna.bundles.routes.)

Before the session is opened the request takes a place at the database gate (`pokna.api.database_gate`),
in the event loop, and gives it back once the commit has returned its connection: a request waiting for a
connection holds no thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from psycopg import AsyncConnection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from pokna.api.database_gate import Place
from pokna.api.rate_limits import client_party
from pokna.errors import Unauthorized
from pokna.runtime import Runtime


async def get_runtime(request: Request) -> Runtime:
    """Async because it does no I/O: FastAPI runs a plain `def` dependency in the thread pool."""
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def runtime_of(request: Request) -> Runtime:
    """`RuntimeDep` without a dependency for FastAPI to solve, for the hot routes (issue 24)."""
    runtime: Runtime = request.app.state.runtime
    return runtime


async def _open_session(request: Request, runtime: RuntimeDep) -> AsyncIterator[Session]:
    """Making a session does no I/O (it connects on first use), so only a COMMIT or ROLLBACK that has a
    transaction to end goes to the thread pool."""
    place = Place(request.app.state.database_gate, client_party(request.scope))
    await place.take()
    request.state.database_place = place
    session = runtime.sessions()
    try:
        yield session
    except BaseException:
        if session.in_transaction():
            await run_in_threadpool(session.rollback)
        raise
    else:
        if session.in_transaction():  # a transaction begun after `_committed_session` (none does today)
            await run_in_threadpool(session.commit)
    finally:
        session.close()  # the transaction has ended either way: no I/O left
        place.give_back()


async def _committed_session(
    request: Request, session: Annotated[Session, Depends(_open_session)]
) -> AsyncIterator[Session]:
    """Commits before the response is sent. On an error it commits nothing and `_open_session` rolls back."""
    yield session
    if session.in_transaction():
        await run_in_threadpool(session.commit)
    request.state.database_place.give_back()  # the commit returned the connection to the pool


SessionDep = Annotated[Session, Depends(_committed_session, scope="function")]
"""The request's one session. Every route and dependency takes it through this alias: FastAPI shares one
value per request only between uses of the same dependency and scope."""

Read = TypeVar("Read")


def first_read(session: Session, read: Callable[[Session], Read]) -> Read:
    """The request's first statement, tried once more on a fresh connection if the one it was given
    turns out to be dead (the database restarted or failed over since it was pooled, and the pool's
    checkout could not tell: `pokna.db.engine`). Nothing has been done yet, so doing it again is safe;
    a connection lost later in a request is a 503 (`pokna.db.sqlstates`), never retried behind the
    client's back."""
    try:
        return read(session)
    except DBAPIError as error:
        if not error.connection_invalidated:
            raise
        session.rollback()
        return read(session)


@asynccontextmanager
async def public_connection(request: Request) -> AsyncIterator[AsyncConnection[Any]]:
    """For an async route that needs no API key (the public logs): a place at the database gate, then one
    of the runtime's async connections. A bearer key sent along is never checked here, so it never counts
    as checked: remembered, a made-up key would earn its own rate-limit bucket (pokna.api.rate_limits)."""
    runtime: Runtime = request.app.state.runtime
    place = Place(request.app.state.database_gate, client_party(request.scope))
    await place.take()
    try:
        async with runtime.aio.connection() as connection:
            yield connection
    finally:
        place.give_back()


@asynccontextmanager
async def driver_connection(request: Request) -> AsyncIterator[AsyncConnection[Any]]:
    """For an async hot path (pokna.db.aio): `public_connection`, whose first statement checks the API key.
    The key counts as checked (for the edge's per-key rate limits) once the block ends, or fails with
    anything but Unauthorized."""
    try:
        async with public_connection(request) as connection:
            yield connection
    except Unauthorized:
        raise
    except BaseException:
        request.state.api_key_authenticated = True
        raise
    else:
        request.state.api_key_authenticated = True
