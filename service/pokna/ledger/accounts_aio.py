"""Accounts on the async road (psycopg): what other domains may know of them, and opening them. The
statements are public for a caller that pipelines them with its own work (pokna.dealer.creating: a new
game reads its seats' wallets and opens its pot in the round trips it already makes). The API's read of
an account is pokna.ledger.reads's."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection

from pokna.db import sqlstates
from pokna.db.types import new_id, utc_now
from pokna.idempotency.keyed import Refusals, Transaction
from pokna.ledger.accounts import AccountSummary, system_external_id
from pokna.ledger.errors import AccountExists
from pokna.ledger.model import AccountKind, check_currency
from pokna.ledger.reads import AccountRecord
from pokna_verify.invariant import present

ACCOUNT_SUMMARIES = (
    "SELECT id, kind, currency, balance FROM account "
    "WHERE tenant_id = %(tenant_id)s AND id = ANY(%(account_ids)s)"
)
"""Id, kind, currency and balance of the tenant's accounts among `account_ids`, read without a lock."""

OPEN_ACCOUNT = (
    "INSERT INTO account (id, tenant_id, kind, currency, external_id, balance, created_at) "
    "VALUES (%(id)s, %(tenant_id)s, %(kind)s, %(currency)s, %(external_id)s, 0, %(created_at)s)"
)
"""A new account with balance 0, whose id and external id nobody has used: it fails (and with it the
caller's transaction) where another of its kind has its external id."""

_OPEN_SYSTEM_ACCOUNT = OPEN_ACCOUNT + " ON CONFLICT (tenant_id, kind, external_id) DO NOTHING"
_SYSTEM_ACCOUNT = (
    "SELECT id FROM account "
    "WHERE tenant_id = %(tenant_id)s AND kind = %(kind)s AND external_id = %(external_id)s"
)


def summaries(rows: Iterable[tuple[str, str, str, int]]) -> dict[str, AccountSummary]:
    """ACCOUNT_SUMMARIES's rows, by id."""
    return {
        account_id: AccountSummary(account_id, kind, currency, int(balance))
        for account_id, kind, currency, balance in rows
    }


def new_account(
    tenant_id: str, kind: AccountKind, currency: str, external_id: str | None, now: datetime
) -> dict[str, Any]:
    """OPEN_ACCOUNT's values for a new account (its id drawn here)."""
    return {
        "id": new_id("acct"),
        "tenant_id": tenant_id,
        "kind": kind.value,
        "currency": check_currency(currency),
        "external_id": external_id,
        "created_at": now,
    }


async def open_system_account(
    connection: AsyncConnection[Any], tenant_id: str, kind: AccountKind, currency: str, chain: int
) -> str:
    """The id of the tenant's system account of `kind`, `currency` and `chain` (a deposit's funding
    account; a rake's revenue account), opened if it is not yet: in the caller's transaction, on its
    connection, two statements in one round trip, once per tenant, kind, currency and chain.

    Race-free under READ COMMITTED: a concurrent first use that inserted it first makes the insert wait
    for that transaction and then do nothing, and the read after it, a statement of its own, sees the
    account whichever transaction opened it. The tenant is the caller's, authenticated already."""
    values = new_account(tenant_id, kind, currency, system_external_id(currency, chain), utc_now())
    async with connection.pipeline():
        await connection.execute(_OPEN_SYSTEM_ACCOUNT, values)
        found = await connection.execute(_SYSTEM_ACCOUNT, values)
    row = present(await found.fetchone(), "the system account, made if missing")
    account_id: str = row[0]
    return account_id


async def open_wallet(opened: Transaction, currency: str, external_id: str | None) -> AccountRecord:
    """A new player wallet with balance 0, in `opened`: AccountExists if the tenant has one for
    `external_id` already (read in the transaction's first round trip; one a concurrent request opened
    meanwhile is refused by the insert, `wallet_refusals`)."""
    connection, kind = opened.connection, AccountKind.PLAYER_WALLET
    values = {"kind": kind.value, "external_id": external_id}
    found = await opened.read(
        lambda tenant_id: connection.execute(_SYSTEM_ACCOUNT, {**values, "tenant_id": tenant_id})
    )
    existing = await found.fetchone()
    if existing is not None:
        raise AccountExists(
            f"tenant {opened.tenant} already has a {kind} account for {external_id!r}", account_id=existing[0]
        )
    new = new_account(opened.tenant, kind, currency, external_id, utc_now())
    await connection.execute(OPEN_ACCOUNT, new)
    return AccountRecord(new["id"], kind.value, external_id, new["currency"], 0, new["created_at"])


def wallet_refusals(external_id: str | None) -> Refusals:
    """A wallet's insert refused: its external id taken by a concurrent request after the read."""
    refused = f"a {AccountKind.PLAYER_WALLET} account for {external_id!r} was opened meanwhile"
    return {sqlstates.UNIQUE_VIOLATION: lambda error: AccountExists(refused, account_id=None)}
