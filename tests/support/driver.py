"""The async road (psycopg's `AsyncConnection`) from synchronous test code: `on_database` runs one
coroutine on a connection of its own, in one transaction committed when it returns; the wrappers below
are the repositories' functions so called (a tenant and its keys, accounts, an export, reconcile, a
checkpoint, the heads)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from psycopg import AsyncConnection
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.backend import conninfo_of
from pokna.db.types import utc_now
from pokna.ledger import EXPORTERS, accounts_aio, read_heads_async, reads, take_checkpoint_async
from pokna.ledger.checkpoint import Checkpoint
from pokna.ledger.errors import AccountExists
from pokna.ledger.model import DEFAULT_CURRENCY, AccountKind
from pokna.ledger.reads import AccountRecord
from pokna.ledger.reconcile import ReconcileReport
from pokna.ledger.reconcile import reconcile as reconcile_books
from pokna.tenants import service as tenants

Done = TypeVar("Done")
Database = sessionmaker[Session] | Session | Engine | str
"""What a test holds of its database: its session factory or a session (a connection of its own is
opened to the same database: it sees what the session committed, not what it holds uncommitted), its
engine, or its URL."""


def conninfo(database: Database) -> str:
    if isinstance(database, str):
        return conninfo_of(database)
    bind = database.kw["bind"] if isinstance(database, sessionmaker) else database
    bound = bind.get_bind() if isinstance(bind, Session) else bind
    assert isinstance(bound, Engine)
    return conninfo_of(bound.url.render_as_string(hide_password=False))


def on_database(database: Database, work: Callable[[AsyncConnection[Any]], Awaitable[Done]]) -> Done:
    """`work` on a connection of its own, in one transaction committed when it returns (rolled back if it
    raises); in a thread of its own when this thread already runs an event loop."""

    async def connected() -> Done:
        async with await AsyncConnection.connect(conninfo(database)) as connection:
            return await work(connection)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(connected())
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, connected()).result()


def create_tenant(database: Database, name: str) -> tenants.TenantRecord:
    return on_database(database, lambda connection: tenants.create_tenant(connection, name))


def issue_api_key(database: Database, tenant_id: str) -> tenants.IssuedKey:
    return on_database(database, lambda connection: tenants.issue_api_key(connection, tenant_id))


def new_api_key(database: Database, name: str) -> tenants.IssuedKey:
    """A new tenant named `name` and its first API key, as `pokna tenants create` makes them."""

    async def created(connection: AsyncConnection[Any]) -> tenants.IssuedKey:
        return await tenants.issue_api_key(connection, (await tenants.create_tenant(connection, name)).id)

    return on_database(database, created)


def revoke_api_key(database: Database, key_id: str) -> tenants.ApiKeyRecord:
    return on_database(database, lambda connection: tenants.revoke_api_key(connection, key_id))


def list_api_keys(database: Database, tenant_id: str) -> list[tenants.ApiKeyRecord]:
    return on_database(database, lambda connection: tenants.list_api_keys(connection, tenant_id))


def export(
    database: Database,
    tenant_id: str,
    export_format: str = "jsonl",
    *,
    chain: int | None = None,
    from_seq: int | None = None,
    to_seq: int | None = None,
) -> list[str]:
    """The export's chunks, as `GET /v1/ledger/export` streams them (pokna.ledger.export_aio)."""

    async def chunks(connection: AsyncConnection[Any]) -> list[str]:
        exporter = EXPORTERS[export_format]
        return [chunk async for chunk in exporter(connection, tenant_id, chain, from_seq, to_seq)]

    return on_database(database, chunks)


def export_jsonl(database: Database, tenant_id: str, **bounds: int | None) -> list[str]:
    return export(database, tenant_id, "jsonl", **bounds)


def export_csv(database: Database, tenant_id: str, **bounds: int | None) -> list[str]:
    return export(database, tenant_id, "csv", **bounds)


def export_beancount(database: Database, tenant_id: str, **bounds: int | None) -> list[str]:
    return export(database, tenant_id, "beancount", **bounds)


def reconcile(
    database: Database, tenant_id: str | None = None, *, check_chain: bool = False
) -> ReconcileReport:
    return on_database(
        database, lambda connection: reconcile_books(connection, tenant_id, check_chain=check_chain)
    )


def open_account(database: Database, **options: Any) -> AccountRecord:
    """`open_account_on`'s options: tenant_id, kind, currency, external_id."""
    return on_database(database, lambda connection: open_account_on(connection, **options))


_OF_EXTERNAL_ID = "SELECT id FROM account WHERE tenant_id = %(tenant_id)s AND kind = %(kind)s AND external_id = %(external_id)s"


async def open_account_on(
    connection: AsyncConnection[Any],
    *,
    tenant_id: str,
    kind: AccountKind | str,
    currency: str = DEFAULT_CURRENCY,
    external_id: str | None = None,
) -> AccountRecord:
    """A new account with balance 0 of any kind, for a tenant named (the API opens player wallets only:
    pokna.ledger.accounts_aio.open_wallet); AccountExists where the tenant has one of this kind for
    `external_id`, without failing the caller's transaction."""
    values = accounts_aio.new_account(tenant_id, AccountKind(kind), currency, external_id, utc_now())
    inserted = await connection.execute(
        accounts_aio.OPEN_ACCOUNT + " ON CONFLICT (tenant_id, kind, external_id) DO NOTHING RETURNING id",
        values,
    )
    if await inserted.fetchone() is None:
        existing = await (await connection.execute(_OF_EXTERNAL_ID, values)).fetchone()
        raise AccountExists(
            f"tenant {tenant_id} already has a {kind} account for {external_id!r}",
            account_id=None if existing is None else existing[0],
        )
    return AccountRecord(
        values["id"], values["kind"], external_id, values["currency"], 0, values["created_at"]
    )


def system_account(
    database: Database, tenant_id: str, kind: AccountKind, currency: str = DEFAULT_CURRENCY, chain: int = 0
) -> AccountRecord:
    """The tenant's system account of `kind`, `currency` and `chain`, opened on first use as the service
    opens it (a deposit's funding sub-account, a rake's revenue one)."""

    async def opened(connection: AsyncConnection[Any]) -> AccountRecord:
        account_id = await accounts_aio.open_system_account(connection, tenant_id, kind, currency, chain)
        found = await connection.execute(reads.ACCOUNT, {"tenant_id": tenant_id, "account_id": account_id})
        return reads.account_of(account_id, await found.fetchone())

    return on_database(database, opened)


def funding_account(
    database: Database, tenant_id: str, currency: str = DEFAULT_CURRENCY, chain: int = 0
) -> AccountRecord:
    """The tenant's external funding account of `chain`: the other side of a deposit posted on it."""
    return system_account(database, tenant_id, AccountKind.EXTERNAL_FUNDING, currency, chain)


def take_checkpoint(database: Database, tenant_id: str, signing_key: Ed25519PrivateKey) -> Checkpoint:
    """A signed checkpoint of the tenant's heads now, as `pokna ledger checkpoint` takes it."""
    return on_database(database, lambda connection: take_checkpoint_async(connection, tenant_id, signing_key))


def read_heads(database: Database, tenant_id: str) -> dict[int, tuple[int, str]]:
    return on_database(database, lambda connection: read_heads_async(connection, tenant_id))
