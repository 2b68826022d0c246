"""Money moved as an integrating app moves it, without the HTTP around it: a tenant's deposits and
withdrawals through `pokna.ledger.moving.move`, the service function the deposit and withdrawal routes
call, handed what a route hands it (the API key's digest, an Idempotency-Key and the request's
fingerprint, one of the runtime's async connections).

For tests that move money many times, many at once, or from hypothesis. A test that moves money a few times
sends the requests instead (support.tenant_api.TenantApi.deposit and .withdraw).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from uuid import uuid4

from psycopg import AsyncConnection
from sqlalchemy.orm import Session, sessionmaker

from pokna.api.idempotency import request_fingerprint
from pokna.db.aio import AsyncDatabase
from pokna.db.backend import conninfo_of
from pokna.db.engine import Waits
from pokna.ledger import moving
from pokna.runtime import Runtime
from pokna.tenants.authentication import key_digest
from support.driver import new_api_key

T = TypeVar("T")


@dataclass(frozen=True)
class Teller:
    """One tenant's money moves, on one runtime's database."""

    tenant_id: str
    api_key: str
    database: AsyncDatabase

    @classmethod
    def of(cls, runtime: Runtime, tenant_id: str, api_key: str) -> Teller:
        return cls(tenant_id, api_key, runtime.aio)

    async def deposit(
        self,
        account_id: str,
        amount: int,
        *,
        reference: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        key: str | None = None,
        connection: AsyncConnection[Any] | None = None,
    ) -> dict[str, Any]:
        """The answer a client gets (`JournalTransactionOut`, with the wallet's balance after it); a refusal
        raises the ledger's typed error, as the route's handler receives it."""
        return await self.move("deposit", account_id, amount, reference, metadata, key, connection)

    async def withdraw(
        self,
        account_id: str,
        amount: int,
        *,
        reference: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        key: str | None = None,
        connection: AsyncConnection[Any] | None = None,
    ) -> dict[str, Any]:
        return await self.move("withdrawal", account_id, amount, reference, metadata, key, connection)

    async def move(
        self,
        kind: Literal["deposit", "withdrawal"],
        account_id: str,
        amount: int,
        reference: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        key: str | None = None,
        connection: AsyncConnection[Any] | None = None,
    ) -> dict[str, Any]:
        """Under `key` (a fresh one if none: money moves only under a key), on `connection` if given (a
        test that lines its clients up opens theirs first)."""
        if connection is None:
            async with self.database.connection() as own:
                return await self.move(kind, account_id, amount, reference, metadata, key, own)
        path = f"/v1/accounts/{account_id}/{'deposits' if kind == 'deposit' else 'withdrawals'}"
        body: dict[str, Any] = {"amount": amount}
        if reference is not None:
            body["reference"] = reference
        if metadata is not None:
            body["metadata"] = dict(metadata)
        moved = await moving.move(
            connection,
            key_digest(self.api_key),
            key or f"move-{uuid4()}",
            request_fingerprint("POST", path, json.dumps(body).encode()),
            moving.Movement(kind, account_id, amount, reference, metadata),
        )
        answer: dict[str, Any] = json.loads(moved.body)
        return answer

    def run(self, moves: Coroutine[Any, Any, T]) -> T:
        """Moves from synchronous test code: `teller.run(teller.deposit(wallet, 5))`."""
        return asyncio.run(moves)


def new_teller(runtime: Runtime, sessions: sessionmaker[Session], name: str = "Mos Espa") -> Teller:
    """A new tenant with an API key, and its teller."""
    issued = new_api_key(sessions, name)
    return Teller.of(runtime, issued.tenant_id, issued.secret)


@contextmanager
def teller_on(database_url: str, tenant_id: str, api_key: str) -> Iterator[Teller]:
    """A teller on async connections of its own, for a test whose app runs elsewhere (a real `pokna serve`
    on `database_url`)."""
    # No pool is opened: each move's connection is its own (pokna.db.aio, a caller outside the app's loop).
    yield Teller(tenant_id, api_key, AsyncDatabase.for_conninfo(conninfo_of(database_url), Waits(), 1, 0))
