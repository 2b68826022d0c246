"""Request-scoped dependencies: the runtime, and the request's connections.

Every route reaches PostgreSQL on psycopg's async pool (pokna.db.aio): `driver_connection` for a route
that reads or writes as the tenant of its API key (its first statement checks the key, or the key's check
goes in the pipeline beside the work: pokna.tenants.authentication), `public_connection` for a public one.
No request holds an ORM session or a thread. A transaction is opened and ended by the one keyed
transaction (pokna.idempotency.keyed) or, for the export's one transaction, by the route; a connection is
given back to the pool closed if it was left inside a transaction.

Before a connection is taken the request takes a place at the database gate (`pokna.api.database_gate`),
in the event loop, and gives it back once the connection is back in the pool: a request waiting for a
connection holds no thread.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any

from fastapi import Depends, Request
from psycopg import AsyncConnection

from pokna.api.database_gate import Place
from pokna.api.rate_limits import client_party
from pokna.errors import Unauthorized
from pokna.runtime import Runtime
from pokna_verify.invariant import present


async def get_runtime(request: Request) -> Runtime:
    """Async because it does no I/O: FastAPI runs a plain `def` dependency in the thread pool."""
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def runtime_of(request: Request) -> Runtime:
    """`RuntimeDep` without a dependency for FastAPI to solve, for the hot routes (issue 24)."""
    runtime: Runtime = request.app.state.runtime
    return runtime


class _Connected(AbstractAsyncContextManager[AsyncConnection[Any]]):
    """A place at the database gate, then one of the runtime's async connections; both given back when
    the block ends. A class rather than an `asynccontextmanager` generator: every hot request goes
    through one, and a generator's context manager costs a helper, a generator and its frame each
    time (issue 44)."""

    def __init__(self, request: Request, *, checks_key: bool) -> None:
        self._request = request
        self._checks_key = checks_key
        self._place = Place(request.app.state.database_gate, client_party(request.scope))
        self._held: AbstractAsyncContextManager[AsyncConnection[Any]] | None = None

    async def __aenter__(self) -> AsyncConnection[Any]:
        try:
            await self._place.take()
            runtime: Runtime = self._request.app.state.runtime
            held = runtime.aio.connection()
            connection = await held.__aenter__()
        except BaseException as error:
            self._place.give_back()
            self._ended(error)
            raise
        self._held = held
        return connection

    async def __aexit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        held = present(self._held, "a connection entered before it is left")
        try:
            await held.__aexit__(kind, error, traceback)
        except BaseException as raised:
            self._ended(raised)
            raise
        finally:
            self._place.give_back()
        self._ended(error)

    def _ended(self, error: BaseException | None) -> None:
        if self._checks_key and not isinstance(error, Unauthorized):
            self._request.state.api_key_authenticated = True


def public_connection(request: Request) -> AbstractAsyncContextManager[AsyncConnection[Any]]:
    """For an async route that needs no API key (the public logs): a place at the database gate, then one
    of the runtime's async connections. A bearer key sent along is never checked here, so it never counts
    as checked: remembered, a made-up key would earn its own rate-limit bucket (pokna.api.rate_limits)."""
    return _Connected(request, checks_key=False)


def driver_connection(request: Request) -> AbstractAsyncContextManager[AsyncConnection[Any]]:
    """For an async hot path (pokna.db.aio): `public_connection`, whose first statement checks the API key.
    The key counts as checked (for the edge's per-key rate limits) once the block ends, or fails with
    anything but Unauthorized."""
    return _Connected(request, checks_key=True)
