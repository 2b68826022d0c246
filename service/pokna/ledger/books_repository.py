"""The queries that read a tenant's books as a whole: what exports stream and what reconcile compares.

None takes a lock. An export is bounded by the head it reads first, so postings committed while it streams
never make it inconsistent.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Row, Select, Table, func, select
from sqlalchemy.orm import Session

from pokna.db.models.ledger import Account, JournalPosting, JournalTransaction, LedgerHead

_account = cast(Table, Account.__table__)
_transaction = cast(Table, JournalTransaction.__table__)
_posting = cast(Table, JournalPosting.__table__)
_head = cast(Table, LedgerHead.__table__)
_BATCH = 5000


@dataclass(frozen=True)
class SeqRange:
    """The seqs an export covers, both ends included."""

    first: int
    last: int

    @property
    def empty(self) -> bool:
        return self.first > self.last


def seq_range(session: Session, tenant_id: str, from_seq: int | None, to_seq: int | None) -> SeqRange:
    """The asked-for range, cut at the tenant's chain head as it is now."""
    head = session.execute(select(_head.c.last_seq).where(_head.c.tenant_id == tenant_id)).scalar()
    last = int(head or 0)
    if to_seq is not None:
        last = min(last, to_seq)
    return SeqRange(max(from_seq or 1, 1), last)


def journal_rows(session: Session, tenant_id: str, seqs: SeqRange) -> Iterator[Row[Any]]:
    """One row per posting with its transaction's columns, in seq and leg order, streamed in batches."""
    statement: Select[Any] = (
        select(
            _transaction.c.seq,
            _transaction.c.id,
            _transaction.c.kind,
            _transaction.c.reference,
            _transaction.c.metadata,
            _transaction.c.created_at,
            _transaction.c.prev_hash,
            _transaction.c.hash,
            _posting.c.leg,
            _posting.c.account_id,
            _posting.c.amount,
            _posting.c.currency,
        )
        .join(_posting, _posting.c.transaction_id == _transaction.c.id)
        .where(_transaction.c.tenant_id == tenant_id, _transaction.c.seq.between(seqs.first, seqs.last))
        .order_by(_transaction.c.seq, _posting.c.leg)
    )
    result = session.execute(statement, execution_options={"yield_per": _BATCH})
    try:
        yield from result
    finally:
        result.close()


def accounts_with_head(session: Session, tenant_id: str) -> list[Row[Any]]:
    """Every account of the tenant with its stored balance, and the head's seq, in one statement: so the
    balances describe exactly the postings up to that seq."""
    return list(
        session.execute(
            select(
                _account.c.id,
                _account.c.kind,
                _account.c.currency,
                _account.c.balance,
                _account.c.created_at,
                _head.c.last_seq,
            )
            .select_from(_account.outerjoin(_head, _head.c.tenant_id == _account.c.tenant_id))
            .where(_account.c.tenant_id == tenant_id)
            .order_by(_account.c.id)
        )
    )


def first_created_at(session: Session, tenant_id: str, seqs: SeqRange) -> datetime | None:
    return session.execute(
        select(func.min(_transaction.c.created_at)).where(
            _transaction.c.tenant_id == tenant_id, _transaction.c.seq.between(seqs.first, seqs.last)
        )
    ).scalar()


def balances_before(session: Session, tenant_id: str, before_seq: int) -> list[Row[Any]]:
    """Each account's sum of postings before `before_seq` (account_id, currency, total), by account id."""
    return list(
        session.execute(
            select(_posting.c.account_id, _posting.c.currency, func.sum(_posting.c.amount).label("total"))
            .join(_transaction, _transaction.c.id == _posting.c.transaction_id)
            .where(_transaction.c.tenant_id == tenant_id, _transaction.c.seq < before_seq)
            .group_by(_posting.c.account_id, _posting.c.currency)
            .order_by(_posting.c.account_id)
        )
    )


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
        select(_transaction.c.id, _transaction.c.tenant_id, _transaction.c.chain, _transaction.c.seq)
        .select_from(_transaction.outerjoin(counts, counts.c.transaction_id == _transaction.c.id))
        .where(
            _transaction.c.id.in_(off_balance)
            | (func.coalesce(counts.c.found, 0) != _transaction.c.posting_count)
        )
        .order_by(_transaction.c.tenant_id, _transaction.c.chain, _transaction.c.seq)
    )
    if tenant_id is not None:
        statement = statement.where(_transaction.c.tenant_id == tenant_id)
    return list(session.execute(statement))


def seq_bounds_of_times(
    session: Session, tenant_id: str, from_time: datetime | None, to_time: datetime | None
) -> tuple[int | None, int | None]:
    """The first seq written at or after `from_time` and the last written at or before `to_time`."""
    first = last = None
    if from_time is not None:
        first = session.execute(
            select(func.min(_transaction.c.seq)).where(
                _transaction.c.tenant_id == tenant_id, _transaction.c.created_at >= from_time
            )
        ).scalar()
    if to_time is not None:
        last = session.execute(
            select(func.max(_transaction.c.seq)).where(
                _transaction.c.tenant_id == tenant_id, _transaction.c.created_at <= to_time
            )
        ).scalar()
    return (None if first is None else int(first)), (None if last is None else int(last))


def link_hashes(session: Session, tenant_id: str, seqs: SeqRange) -> tuple[str, str]:
    """The prev_hash of the range's first transaction and the hash of its last."""
    first = session.execute(
        select(_transaction.c.prev_hash).where(
            _transaction.c.tenant_id == tenant_id, _transaction.c.seq == seqs.first
        )
    ).scalar_one()
    last = session.execute(
        select(_transaction.c.hash).where(
            _transaction.c.tenant_id == tenant_id, _transaction.c.seq == seqs.last
        )
    ).scalar_one()
    return str(first), str(last)


def references_before(
    session: Session, tenant_id: str, references: list[str], before_seq: int
) -> dict[str, int]:
    """How many transactions carry each reference before `before_seq`."""
    rows = session.execute(
        select(_transaction.c.reference, func.count().label("transactions"))
        .where(
            _transaction.c.tenant_id == tenant_id,
            _transaction.c.reference.in_(references),
            _transaction.c.seq < before_seq,
        )
        .group_by(_transaction.c.reference)
    )
    return {str(row.reference): int(row.transactions) for row in rows}
