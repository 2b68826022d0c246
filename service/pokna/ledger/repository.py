"""Every query the ledger makes. Services decide; this module only reads and writes rows.

Writes go through Core statements on the mapped tables, not the ORM unit of work: everything between
locking the tenant's head and the caller's commit serializes that tenant's writers, so it must be short.
On PostgreSQL the posting path is one round trip under the lock: the ledger_post() function locks the
head and then the accounts (in id order), checks, hashes, inserts and advances the head.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, cast

from sqlalchemy import Row, Table, bindparam, func, insert, select, update
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


_ACCOUNT_COLUMNS = ("id", "tenant_id", "kind", "currency", "external_id", "balance", "created_at")


def _insert_account_statement(dialect: Any) -> Any:
    """INSERT ... SELECT <values> WHERE the tenant exists ON CONFLICT (tenant, kind, external id) DO
    NOTHING RETURNING id. Built once per dialect; executed with the account's values."""
    values = select(*(bindparam(name, type_=_account.c[name].type) for name in _ACCOUNT_COLUMNS))
    tenant_exists = select(Tenant.id).where(Tenant.id == bindparam("tenant_id")).exists()
    return (
        dialect.insert(_account)
        .from_select(list(_ACCOUNT_COLUMNS), values.where(tenant_exists))
        .on_conflict_do_nothing(index_elements=["tenant_id", "kind", "external_id"])
        .returning(_account.c.id)
    )


_INSERT_ACCOUNT = {
    "postgresql": _insert_account_statement(postgresql),
    "sqlite": _insert_account_statement(sqlite),
}


def insert_account(session: Session, values: dict[str, Any]) -> bool:
    """Insert the account if its tenant exists and no account of that tenant and kind already has its
    external id; False if not (nothing is raised, so the caller's transaction stays usable)."""
    statement = _INSERT_ACCOUNT["postgresql" if is_postgresql(session) else "sqlite"]
    return session.execute(statement, values).first() is not None


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


def account_summaries(session: Session, tenant_id: str, account_ids: Iterable[str]) -> list[Row[Any]]:
    """Id, kind, currency and balance of the tenant's accounts among `account_ids`, read without a lock."""
    return list(
        session.execute(
            select(_account.c.id, _account.c.kind, _account.c.currency, _account.c.balance).where(
                _account.c.id.in_(sorted(set(account_ids))), _account.c.tenant_id == tenant_id
            )
        )
    )


def account_attributes(session: Session, account_ids: Iterable[str]) -> list[Row[Any]]:
    """Id, tenant and currency, read without a lock: a trigger keeps them from ever changing."""
    return list(
        session.execute(
            select(_account.c.id, _account.c.tenant_id, _account.c.currency).where(
                _account.c.id.in_(sorted(set(account_ids)))
            )
        )
    )


class PostOutcome(NamedTuple):
    """ledger_post()'s answer: `status` says whether it posted, and if not, why (refused_* name the culprit)."""

    status: str
    refused_account_id: str | None
    refused_balance: int | None
    refused_change: int | None
    first_seq: int | None
    first_prev_hash: str | None
    hashes: list[str] | None
    held_account_ids: list[str] | None
    held_balances: list[int] | None


_LEDGER_POST = f"SELECT {', '.join(PostOutcome._fields)} FROM ledger_post(%s, %s::jsonb)"  # noqa: S608


def post_postgresql(session: Session, *, tenant_id: str, batch: Mapping[str, Any]) -> PostOutcome:
    """One round trip to ledger_post() (migrations/versions/0005_ledger_post_json.py): it takes the head and
    account locks, checks, hashes and writes, or writes nothing and says why.

    `batch` is its one JSON document (service._batch), encoded here by json.dumps in C: as 22 array
    parameters, psycopg's list dumper (in Python) cost more than the rest of the call's client side."""
    return PostOutcome(
        *session.connection().exec_driver_sql(_LEDGER_POST, (tenant_id, json.dumps(batch))).one()
    )


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
