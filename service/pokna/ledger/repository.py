"""Every query the ledger makes. Services decide; this module only reads and writes rows.

Writes go through Core statements on the mapped tables, not the ORM unit of work: everything between
locking the tenant's head and the caller's commit serializes that tenant's writers, so it must be short.
On PostgreSQL the posting path is two round trips: one statement locks the head and then the accounts
(in id order), one data-modifying CTE inserts the transactions and postings and advances the head.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, cast

from sqlalchemy import Row, Table, TextClause, func, insert, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, selectinload

from pokna.db.models.ledger import Account, JournalPosting, JournalTransaction, LedgerHead
from pokna.db.models.tenant import Tenant
from pokna.ledger.chain import GENESIS_HASH

_account = cast(Table, Account.__table__)
_transaction = cast(Table, JournalTransaction.__table__)
_posting = cast(Table, JournalPosting.__table__)
_head = cast(Table, LedgerHead.__table__)


def is_postgresql(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def tenant_exists(session: Session, tenant_id: str) -> bool:
    return session.execute(select(Tenant.id).where(Tenant.id == tenant_id)).first() is not None


def insert_ignoring_conflict(session: Session, table: Any, values: dict[str, Any], on: Sequence[str]) -> None:
    """INSERT ... ON CONFLICT DO NOTHING: concurrent get-or-create without an error or a lost race."""
    dialect = postgresql if is_postgresql(session) else sqlite
    statement = dialect.insert(table).values(**values).on_conflict_do_nothing(index_elements=list(on))
    session.execute(statement)


def find_account(session: Session, tenant_id: str, kind: str, external_id: str) -> Account | None:
    return session.scalars(
        select(Account).where(
            Account.tenant_id == tenant_id, Account.kind == kind, Account.external_id == external_id
        )
    ).one_or_none()


def lock_head(session: Session, tenant_id: str) -> tuple[int, str] | None:
    """Lock the tenant's chain head (FOR UPDATE; SQLite's BEGIN IMMEDIATE already serializes writers)."""
    row = session.execute(
        select(_head.c.last_seq, _head.c.last_hash).where(_head.c.tenant_id == tenant_id).with_for_update()
    ).first()
    return None if row is None else (int(row.last_seq), str(row.last_hash))


def create_head(session: Session, tenant_id: str) -> None:
    insert_ignoring_conflict(
        session, _head, {"tenant_id": tenant_id, "last_seq": 0, "last_hash": GENESIS_HASH}, ["tenant_id"]
    )


def read_head(session: Session, tenant_id: str) -> tuple[int, str]:
    row = session.execute(
        select(_head.c.last_seq, _head.c.last_hash).where(_head.c.tenant_id == tenant_id)
    ).first()
    return (0, GENESIS_HASH) if row is None else (int(row.last_seq), str(row.last_hash))


def advance_head(session: Session, tenant_id: str, seq: int, hash_: str) -> None:
    session.execute(update(_head).where(_head.c.tenant_id == tenant_id).values(last_seq=seq, last_hash=hash_))


def account_rows(session: Session, account_ids: Iterable[str]) -> list[Row[Any]]:
    return list(
        session.execute(
            select(_account.c.id, _account.c.tenant_id, _account.c.balance).where(
                _account.c.id.in_(sorted(set(account_ids)))
            )
        )
    )


def lock_accounts(session: Session, account_ids: Iterable[str]) -> list[Row[Any]]:
    """Lock accounts in ascending id order, the one global order, so no two writers wait on each other.

    FOR NO KEY UPDATE, not FOR UPDATE: a balance change never touches the key, and the weaker lock does
    not conflict with the FOR KEY SHARE that PostgreSQL takes when another transaction inserts a row
    referencing the account (a game seat, a pot), in whatever order that transaction inserts them."""
    ordered = sorted(set(account_ids))
    return list(
        session.execute(
            select(
                _account.c.id, _account.c.tenant_id, _account.c.kind, _account.c.currency, _account.c.balance
            )
            .where(_account.c.id.in_(ordered))
            .order_by(_account.c.id)
            .with_for_update(key_share=True)
        )
    )


_LOCK_HEAD_THEN_ACCOUNTS = text(
    """
    WITH head AS MATERIALIZED (
        SELECT last_seq, last_hash FROM ledger_head WHERE tenant_id = :tenant_id FOR UPDATE
    )
    SELECT head.last_seq, head.last_hash, a.id, a.tenant_id, a.kind, a.currency, a.balance
    FROM head LEFT JOIN LATERAL (
        SELECT id, tenant_id, kind, currency, balance FROM account
        WHERE id = ANY(:account_ids) AND head.last_seq IS NOT NULL
        ORDER BY id FOR NO KEY UPDATE
    ) AS a ON true
    """
)


def lock_head_and_accounts_postgresql(
    session: Session, tenant_id: str, account_ids: Iterable[str]
) -> tuple[tuple[int, str] | None, list[Row[Any]]]:
    """One round trip: the head row first (a materialized CTE), then the accounts in ascending id order
    (the lateral subquery depends on the head row, so it can only run after the head is locked)."""
    rows = session.execute(
        _LOCK_HEAD_THEN_ACCOUNTS, {"tenant_id": tenant_id, "account_ids": sorted(set(account_ids))}
    ).all()
    if not rows:
        return None, []
    head = (int(rows[0].last_seq), str(rows[0].last_hash))
    return head, [row for row in rows if row.id is not None]


_TRANSACTION_COLUMNS = (
    "id",
    "tenant_id",
    "seq",
    "kind",
    "reference",
    "metadata",
    "idempotency_key",
    "request_hash",
    "posting_count",
    "prev_hash",
    "hash",
    "created_at",
)
_POSTING_COLUMNS = ("id", "transaction_id", "leg", "account_id", "amount", "currency")


@lru_cache(maxsize=64)
def _write_statement(transactions: int, postings: int) -> TextClause:
    def values(columns: Sequence[str], count: int, prefix: str) -> str:
        return ", ".join(
            "("
            + ", ".join(
                f"CAST(:{prefix}{i}_{c} AS JSON)" if c == "metadata" else f":{prefix}{i}_{c}" for c in columns
            )
            + ")"
            for i in range(count)
        )

    # Only constant column names and counts are formatted in; every value is a bound parameter.
    sql = (
        f"WITH t AS (INSERT INTO journal_transaction ({', '.join(_TRANSACTION_COLUMNS)}) "  # noqa: S608
        f"VALUES {values(_TRANSACTION_COLUMNS, transactions, 't')}), "
        f"p AS (INSERT INTO posting ({', '.join(_POSTING_COLUMNS)}) VALUES {values(_POSTING_COLUMNS, postings, 'p')}), "
        "h AS (UPDATE ledger_head SET last_seq = :head_seq, last_hash = :head_hash WHERE tenant_id = :head_tenant) "
        "SELECT 1"
    )
    return text(sql)


def write_postgresql(
    session: Session,
    tenant_id: str,
    transactions: Sequence[dict[str, Any]],
    postings: Sequence[dict[str, Any]],
) -> None:
    """One round trip: every transaction, every posting, and the new head. The triggers still run:
    the chain link BEFORE each transaction row, the balance update AFTER each posting row (at the end
    of the statement, when the transaction rows are visible), the balance check at commit."""
    params: dict[str, Any] = {
        "head_seq": transactions[-1]["seq"],
        "head_hash": transactions[-1]["hash"],
        "head_tenant": tenant_id,
    }
    for index, row in enumerate(transactions):
        for column in _TRANSACTION_COLUMNS:
            value = row[column]
            params[f"t{index}_{column}"] = json.dumps(value) if column == "metadata" else value
    for index, row in enumerate(postings):
        for column in _POSTING_COLUMNS:
            params[f"p{index}_{column}"] = row[column]
    session.execute(_write_statement(len(transactions), len(postings)), params)


def transactions_by_idempotency_key(
    session: Session, tenant_id: str, keys: Sequence[str]
) -> list[JournalTransaction]:
    return list(
        session.scalars(
            select(JournalTransaction)
            .where(JournalTransaction.tenant_id == tenant_id, JournalTransaction.idempotency_key.in_(keys))
            .options(selectinload(JournalTransaction.postings))
            .order_by(JournalTransaction.seq)
        )
    )


def insert_transaction(session: Session, row: dict[str, Any], postings: list[dict[str, Any]]) -> None:
    session.execute(insert(_transaction), row)
    session.execute(insert(_posting), postings)


def get_transaction(session: Session, transaction_id: str) -> JournalTransaction | None:
    return session.scalars(
        select(JournalTransaction)
        .where(JournalTransaction.id == transaction_id)
        .options(selectinload(JournalTransaction.postings))
    ).one_or_none()


def account_balance(session: Session, account_id: str) -> int | None:
    value = session.execute(select(_account.c.balance).where(_account.c.id == account_id)).scalar()
    return None if value is None else int(value)


def account_entries(
    session: Session, account_id: str, *, before_seq: int | None, limit: int
) -> list[Row[Any]]:
    statement = (
        select(
            _transaction.c.id,
            _transaction.c.seq,
            _transaction.c.kind,
            _transaction.c.reference,
            _transaction.c.created_at,
            _posting.c.amount,
            _posting.c.currency,
        )
        .join(_posting, _posting.c.transaction_id == _transaction.c.id)
        .where(_posting.c.account_id == account_id)
        .order_by(_transaction.c.seq.desc())
        .limit(limit)
    )
    if before_seq is not None:
        statement = statement.where(_transaction.c.seq < before_seq)
    return list(session.execute(statement))


def transaction_seq(session: Session, transaction_id: str, account_id: str) -> int | None:
    """The seq of a transaction that touched this account: a cursor from another list is no cursor here."""
    return session.scalar(
        select(_transaction.c.seq)
        .join(_posting, _posting.c.transaction_id == _transaction.c.id)
        .where(_transaction.c.id == transaction_id, _posting.c.account_id == account_id)
        .limit(1)
    )


def tenant_accounts(session: Session, tenant_id: str, currency: str | None = None) -> list[Account]:
    statement = select(Account).where(Account.tenant_id == tenant_id).order_by(Account.id)
    if currency is not None:
        statement = statement.where(Account.currency == currency)
    return list(session.scalars(statement))


def balance_differences(session: Session, tenant_id: str | None) -> list[Row[Any]]:
    """Accounts whose stored balance is not the sum of their postings."""
    sums = (
        select(_posting.c.account_id, func.sum(_posting.c.amount).label("total"))
        .group_by(_posting.c.account_id)
        .subquery()
    )
    computed = func.coalesce(sums.c.total, 0)
    statement = (
        select(_account.c.id, _account.c.tenant_id, _account.c.balance, computed.label("computed"))
        .select_from(_account.outerjoin(sums, sums.c.account_id == _account.c.id))
        .where(_account.c.balance != computed)
        .order_by(_account.c.id)
    )
    if tenant_id is not None:
        statement = statement.where(_account.c.tenant_id == tenant_id)
    return list(session.execute(statement))


def unbalanced_transactions(session: Session, tenant_id: str | None) -> list[Row[Any]]:
    """Transactions whose postings do not sum to zero per currency or do not number as declared."""
    per_currency = (
        select(
            _posting.c.transaction_id,
            _posting.c.currency,
            func.sum(_posting.c.amount).label("total"),
        )
        .group_by(_posting.c.transaction_id, _posting.c.currency)
        .subquery()
    )
    off_balance = select(per_currency.c.transaction_id).where(per_currency.c.total != 0)
    counts = (
        select(_posting.c.transaction_id, func.count().label("found"))
        .group_by(_posting.c.transaction_id)
        .subquery()
    )
    statement = (
        select(_transaction.c.id, _transaction.c.tenant_id, _transaction.c.seq)
        .select_from(_transaction.outerjoin(counts, counts.c.transaction_id == _transaction.c.id))
        .where(
            _transaction.c.id.in_(off_balance)
            | (func.coalesce(counts.c.found, 0) != _transaction.c.posting_count)
        )
        .order_by(_transaction.c.tenant_id, _transaction.c.seq)
    )
    if tenant_id is not None:
        statement = statement.where(_transaction.c.tenant_id == tenant_id)
    return list(session.execute(statement))


def tenant_ids_with_ledgers(session: Session) -> list[str]:
    return list(session.scalars(select(_head.c.tenant_id).order_by(_head.c.tenant_id)))
