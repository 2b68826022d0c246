"""Reading the books over the API: an account, its postings, a tenant's trial balance, its checkpoints.

Each read is sent beside the API key's check in one round trip (pokna.tenants.authentication.read_beside),
bound to the tenant as a value so that Citus sends it to the tenant's shard alone (docs/scaling.md); no
locks, no transaction. The statements are named here, and each answer is built from their rows by a
function of its own, so that a test reads the books the same way on its own connection
(tests/support/ledger_reads.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg import AsyncConnection, AsyncCursor

from pokna.ledger.accounts import PER_CHAIN_KINDS, sub_account_chain
from pokna.ledger.checkpoint import Checkpoint
from pokna.ledger.errors import AccountNotFound, TransactionNotFound
from pokna.paging import Page, page_of
from pokna.tenants.authentication import read_beside

ACCOUNT = (
    "SELECT id, kind, external_id, currency, balance, created_at FROM account "
    "WHERE tenant_id = %(tenant_id)s AND id = %(account_id)s"
)

POSITION = (
    "SELECT cp.created_at, cp.transaction_id FROM posting AS cp "
    "WHERE cp.tenant_id = %(tenant_id)s AND cp.transaction_id = %(after)s AND cp.account_id = %(account_id)s "
    "LIMIT 1"
)
"""Where a cursor stands: (created_at, id) of a transaction that touched the account, as its posting on the
account carries them (the posting trigger holds a posting's created_at to its transaction's); a cursor from
another list is no cursor here."""

_ENTRIES = (
    "SELECT t.id, t.seq, t.chain, t.kind, t.reference, t.created_at, p.amount, p.currency "
    "FROM posting AS p CROSS JOIN LATERAL (SELECT j.id, j.seq, j.chain, j.kind, j.reference, j.created_at "
    "FROM journal_transaction AS j WHERE j.tenant_id = %(tenant_id)s AND j.id = p.transaction_id LIMIT 1) AS t "
    "WHERE p.tenant_id = %(tenant_id)s AND p.account_id = %(account_id)s"
)
"""The page of the account's postings first, then each one's transaction by its key. The postings are in
their transactions' order by themselves (created_at is the transaction's, transaction_id its id), so the
page is `ix_posting_account_time` read backwards from its top or from the cursor, `limit` entries, whatever
the account's history (0025_posting_created_at; bench/README.md, "An account's page"). The lateral
subquery's LIMIT keeps the planner from flattening it into a join."""
_NEWEST_FIRST = " ORDER BY p.created_at DESC, p.transaction_id DESC LIMIT %(limit)s"  # chains share no seq
ENTRIES = _ENTRIES + _NEWEST_FIRST
ENTRIES_AFTER = _ENTRIES + f" AND (p.created_at, p.transaction_id) < ({POSITION})" + _NEWEST_FIRST

TENANT_ACCOUNTS = (
    "SELECT id, kind, external_id, balance FROM account "
    "WHERE tenant_id = %(tenant_id)s AND currency = %(currency)s ORDER BY id"
)

CHECKPOINTS = (
    "SELECT id, tenant_id, seq, hash, created_at, key_id, signature, heads FROM ledger_checkpoint "
    "WHERE tenant_id = %(tenant_id)s ORDER BY created_at DESC, id DESC LIMIT %(limit)s"
)
"""Newest first by time: with chains, chain 0's seq no longer orders them."""


@dataclass(frozen=True)
class AccountRecord:
    """An account as read: what `GET /v1/accounts/{id}` answers."""

    id: str
    kind: str
    external_id: str | None
    currency: str
    balance: int
    created_at: datetime


@dataclass(frozen=True)
class AccountEntry:
    """One posting on an account, with its transaction's identity."""

    transaction_id: str
    seq: int
    chain: int
    kind: str
    reference: str | None
    created_at: datetime
    amount: int
    currency: str


async def read_account(connection: AsyncConnection[Any], digest: str, account_id: str) -> AccountRecord:
    """The key's tenant's account; another tenant's is as absent as none (AccountNotFound)."""
    _, found = await read_beside(
        connection, digest, lambda tenant_id: _queue(connection, ACCOUNT, tenant_id, account_id=account_id)
    )
    return account_of(account_id, await found.fetchone())


async def account_entries(
    connection: AsyncConnection[Any], digest: str, account_id: str, *, limit: int, after: str | None
) -> Page[AccountEntry]:
    """The account's postings, newest first, `limit` at a time; `after` is the last transaction id of the
    previous page (TransactionNotFound if it is not a transaction of this account)."""

    async def queue(tenant_id: str) -> tuple[AsyncCursor[Any], ...]:
        account = await _queue(connection, ACCOUNT, tenant_id, account_id=account_id)
        values = {"account_id": account_id, "after": after, "limit": limit + 1}
        if after is None:
            return account, await _queue(connection, ENTRIES, tenant_id, **values)
        position = await _queue(connection, POSITION, tenant_id, **values)
        return account, await _queue(connection, ENTRIES_AFTER, tenant_id, **values), position

    _, (account, entries, *position) = await read_beside(connection, digest, queue)
    account_of(account_id, await account.fetchone())
    if position and await position[0].fetchone() is None:
        raise TransactionNotFound(f"no journal transaction {after}", transaction_id=str(after))
    return entries_page(await entries.fetchall(), limit)


async def trial_balance(connection: AsyncConnection[Any], digest: str, currency: str) -> TrialBalance:
    tenant_id, accounts = await read_beside(
        connection,
        digest,
        lambda tenant_id: _queue(connection, TENANT_ACCOUNTS, tenant_id, currency=currency),
    )
    return trial_balance_of(tenant_id, currency, await accounts.fetchall())


async def checkpoints(connection: AsyncConnection[Any], digest: str, *, limit: int = 50) -> list[Checkpoint]:
    """The key's tenant's checkpoints, newest first."""
    _, found = await read_beside(
        connection, digest, lambda tenant_id: _queue(connection, CHECKPOINTS, tenant_id, limit=limit)
    )
    return checkpoints_of(await found.fetchall())


async def _queue(
    connection: AsyncConnection[Any], statement: str, tenant_id: str, **values: Any
) -> AsyncCursor[Any]:
    return await connection.execute(statement, {"tenant_id": tenant_id, **values})


def account_of(account_id: str, row: Sequence[Any] | None) -> AccountRecord:
    """ACCOUNT's row, or AccountNotFound."""
    if row is None:
        raise AccountNotFound(f"no account {account_id}", account_id=account_id)
    account_id, kind, external_id, currency, balance, created_at = row
    return AccountRecord(account_id, kind, external_id, currency, int(balance), created_at.astimezone(UTC))


def entries_page(rows: Sequence[Sequence[Any]], limit: int) -> Page[AccountEntry]:
    """ENTRIES's `limit + 1` rows as a page; the cursor is the last transaction's id."""
    entries = [
        AccountEntry(id_, int(seq), int(chain), kind, reference, at.astimezone(UTC), int(amount), currency)
        for id_, seq, chain, kind, reference, at, amount, currency in rows
    ]
    return page_of(entries, limit, lambda entry: entry.transaction_id)


def checkpoints_of(rows: Sequence[Sequence[Any]]) -> list[Checkpoint]:
    """CHECKPOINTS's rows (an audit bundle's read of them too: pokna.ledger.audit_reads)."""
    return [
        Checkpoint(id_, tenant_id, int(seq), hash_, at.astimezone(UTC), key_id, signature, heads)
        for id_, tenant_id, seq, hash_, at, key_id, signature, heads in rows
    ]


@dataclass(frozen=True)
class AccountBalance:
    account_id: str
    kind: str
    external_id: str | None
    balance: int


@dataclass(frozen=True)
class ChartLine:
    """One account of the tenant's chart as it knows it: an ordinary account, or one kept in per-chain
    parts (`parts`, by chain), whose balance is theirs together."""

    account_id: str
    kind: str
    external_id: str | None
    balance: int
    parts: tuple[tuple[int, AccountBalance], ...] = ()


@dataclass(frozen=True)
class TrialBalance:
    """Every account of one tenant and currency; `total` is zero whenever the books are sound."""

    tenant_id: str
    currency: str
    accounts: list[AccountBalance]

    @property
    def total(self) -> int:
        return sum(account.balance for account in self.accounts)

    def chart(self) -> list[ChartLine]:
        """The accounts as the tenant knows them: the funding and revenue accounts, which the ledger keeps
        one per chain so that chains never wait for each other (docs/ledger.md, "Chains"), each as one
        account with its chains' parts as sub-accounts (issue 37, item 8: a tenant with two deposits saw
        `CREDIT/chain2`, `CREDIT/chain6`, ... as accounts of its own). The account's id is its first part's
        (chain 0's, the one of before chains, when it has one). In the order of the accounts' ids."""
        lines: list[ChartLine] = []
        grouped: dict[str, list[tuple[int, AccountBalance]]] = {}
        for account in self.accounts:
            if account.kind in PER_CHAIN_KINDS:
                chain = sub_account_chain(account.external_id, self.currency)
                if chain >= 0:
                    grouped.setdefault(account.kind, []).append((chain, account))
                    continue
            lines.append(ChartLine(account.account_id, account.kind, account.external_id, account.balance))
        for kind, parts in grouped.items():
            parts.sort(key=lambda part: part[0])
            first = parts[0][1]
            balance = sum(account.balance for _, account in parts)
            lines.append(ChartLine(first.account_id, kind, self.currency, balance, tuple(parts)))
        return sorted(lines, key=lambda line: line.account_id)


def trial_balance_of(tenant_id: str, currency: str, rows: Sequence[Sequence[Any]]) -> TrialBalance:
    """TENANT_ACCOUNTS's rows."""
    return TrialBalance(
        tenant_id,
        currency,
        [AccountBalance(id_, kind, external_id, int(balance)) for id_, kind, external_id, balance in rows],
    )
