"""The queries that read a tenant's books as a whole: what exports stream and what reconcile compares.

None takes a lock. An export is bounded by the head it reads first, so postings committed while it streams
never make it inconsistent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Row, Select, Table, and_, func, or_, select
from sqlalchemy.orm import Session

from pokna.db.models.ledger import Account, JournalPosting, JournalTransaction, LedgerHead
from pokna.errors import InvalidRequest

_account = cast(Table, Account.__table__)
_transaction = cast(Table, JournalTransaction.__table__)
_posting = cast(Table, JournalPosting.__table__)
_head = cast(Table, LedgerHead.__table__)
_BATCH = 5000


@dataclass(frozen=True)
class SeqRange:
    """The seqs of one chain an export covers, both ends included."""

    first: int
    last: int
    chain: int = 0

    @property
    def empty(self) -> bool:
        return self.first > self.last


def head_seqs(session: Session, tenant_id: str) -> dict[int, int]:
    """Every chain's head seq as it is now, read in one statement (chains with no transaction left out)."""
    rows = session.execute(
        select(_head.c.chain, _head.c.last_seq).where(_head.c.tenant_id == tenant_id, _head.c.last_seq > 0)
    )
    return {int(row.chain): int(row.last_seq) for row in rows}


SEQ_NEEDS_CHAIN = (
    "from_seq and to_seq are positions on one chain: give chain too (chain=0 is what a seq meant before the "
    "journal had chains); to read every chain on from where you left off, ask each chain from the seq after "
    "the last one you have of it (every transaction names its chain and seq); the audit bundle also takes "
    "from_time, on every chain"
)


def selected_chains(
    chain: int | None, from_seq: int | None, to_seq: int | None, heads: Mapping[int, int]
) -> list[int]:
    """The chains a range covers: `chain` alone when given; otherwise every chain with a transaction,
    ascending. A seq bound without a chain is refused (InvalidRequest naming `query.chain`): a seq is a
    position on one chain. It used to mean chain 0's (the only chain before there were chains), so an
    incremental reader that asked `from_seq` alone silently got chain 0 and nothing of the others (issue 37,
    item 7)."""
    check_seq_bounds(chain, from_seq, to_seq)
    if chain is not None:
        return [chain]
    return sorted(heads) or [0]


def check_seq_bounds(chain: int | None, from_seq: int | None, to_seq: int | None) -> None:
    """Refuse a seq bound without a chain (see selected_chains)."""
    if chain is None and (from_seq is not None or to_seq is not None):
        raise InvalidRequest(SEQ_NEEDS_CHAIN, field="query.chain")


def seq_ranges(
    heads: Mapping[int, int], chains: list[int], from_seq: int | None, to_seq: int | None
) -> list[SeqRange]:
    """Per chain in `chains`, the asked-for seqs cut at that chain's head in `heads` (empty ones kept)."""
    ranges = []
    for chain in chains:
        last = heads.get(chain, 0)
        if to_seq is not None:
            last = min(last, to_seq)
        ranges.append(SeqRange(max(from_seq or 1, 1), last, chain))
    return ranges


def seq_range(
    session: Session,
    tenant_id: str,
    from_seq: int | None,
    to_seq: int | None,
    chain: int | None = None,
) -> list[SeqRange]:
    """The non-empty ranges (one per chain, ascending) an export of chain `chain` (None: see
    selected_chains) from `from_seq` to `to_seq` covers, cut at the chains' heads as they are now."""
    heads = head_seqs(session, tenant_id)
    chains = selected_chains(chain, from_seq, to_seq, heads)
    return [seqs for seqs in seq_ranges(heads, chains, from_seq, to_seq) if not seqs.empty]


def _in_ranges(ranges: Sequence[SeqRange]) -> Any:
    return or_(
        *(
            and_(_transaction.c.chain == seqs.chain, _transaction.c.seq.between(seqs.first, seqs.last))
            for seqs in ranges
        )
    )


def journal_rows(session: Session, tenant_id: str, ranges: Sequence[SeqRange]) -> Iterator[Row[Any]]:
    """One row per posting with its transaction's columns, in (chain, seq) and leg order, streamed in
    batches: one query per chain."""
    for seqs in ranges:
        if seqs.empty:
            continue
        statement: Select[Any] = (
            select(
                _transaction.c.chain,
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
            .join(_posting, _posting_of_transaction())
            .where(
                _transaction.c.tenant_id == tenant_id,
                _transaction.c.chain == seqs.chain,
                _transaction.c.seq.between(seqs.first, seqs.last),
            )
            .order_by(_transaction.c.seq, _posting.c.leg)
        )
        result = session.execute(statement, execution_options={"yield_per": _BATCH})
        try:
            yield from result
        finally:
            result.close()


def accounts_with_heads(session: Session, tenant_id: str) -> tuple[list[Any], dict[int, int]]:
    """Every account of the tenant with its stored balance, and every chain's head seq, in one statement:
    so the balances describe exactly the postings up to those heads."""
    live = (_head.c.tenant_id == tenant_id) & (_head.c.last_seq > 0)
    heads = select(func.json_object_agg(_head.c.chain, _head.c.last_seq)).where(live)
    rows = list(
        session.execute(
            select(
                _account.c.id,
                _account.c.kind,
                _account.c.external_id,
                _account.c.currency,
                _account.c.balance,
                _account.c.created_at,
                heads.scalar_subquery().label("heads"),
            )
            .where(_account.c.tenant_id == tenant_id)
            .order_by(_account.c.id)
        )
    )
    if not rows:
        return rows, {}
    return rows, {int(chain): int(seq) for chain, seq in (rows[0].heads or {}).items()}


def first_created_at(session: Session, tenant_id: str, ranges: Sequence[SeqRange]) -> datetime | None:
    ranges = [seqs for seqs in ranges if not seqs.empty]
    if not ranges:
        return None
    return session.execute(
        select(func.min(_transaction.c.created_at)).where(
            _transaction.c.tenant_id == tenant_id, _in_ranges(ranges)
        )
    ).scalar()


def balances_before(session: Session, tenant_id: str, ranges: Sequence[SeqRange]) -> list[Row[Any]]:
    """Each account's sum of the postings on each range's chain before the range's first seq (account_id,
    currency, total), by account id."""
    before = [seqs for seqs in ranges if seqs.first > 1]
    if not before:
        return []
    earlier = or_(
        *(and_(_transaction.c.chain == seqs.chain, _transaction.c.seq < seqs.first) for seqs in before)
    )
    return list(
        session.execute(
            select(_posting.c.account_id, _posting.c.currency, func.sum(_posting.c.amount).label("total"))
            .join(_transaction, _posting_of_transaction())
            .where(_transaction.c.tenant_id == tenant_id, earlier)
            .group_by(_posting.c.account_id, _posting.c.currency)
            .order_by(_posting.c.account_id)
        )
    )


def balance_differences(session: Session, tenant_id: str | None) -> list[Row[Any]]:
    """Accounts whose stored balance is not the sum of their postings."""
    sums = (
        select(_posting.c.tenant_id, _posting.c.account_id, func.sum(_posting.c.amount).label("total"))
        .group_by(_posting.c.tenant_id, _posting.c.account_id)
        .subquery()
    )
    computed = func.coalesce(sums.c.total, 0)
    # Grouped and joined by tenant too: on Citus each shard answers for its own tenants.
    of_account = and_(sums.c.tenant_id == _account.c.tenant_id, sums.c.account_id == _account.c.id)
    statement = (
        select(_account.c.id, _account.c.tenant_id, _account.c.balance, computed.label("computed"))
        .select_from(_account.outerjoin(sums, of_account))
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
            _posting.c.tenant_id,
            _posting.c.transaction_id,
            _posting.c.currency,
            func.sum(_posting.c.amount).label("total"),
        )
        .group_by(_posting.c.tenant_id, _posting.c.transaction_id, _posting.c.currency)
        .subquery()
    )
    off_balance = (
        select(per_currency.c.tenant_id, per_currency.c.transaction_id)
        .where(per_currency.c.total != 0)
        .group_by(per_currency.c.tenant_id, per_currency.c.transaction_id)
        .subquery()
    )
    counts = (
        select(_posting.c.tenant_id, _posting.c.transaction_id, func.count().label("found"))
        .group_by(_posting.c.tenant_id, _posting.c.transaction_id)
        .subquery()
    )
    # Grouped and joined by tenant too: on Citus each shard answers for its own tenants.
    of_counts = and_(
        counts.c.tenant_id == _transaction.c.tenant_id, counts.c.transaction_id == _transaction.c.id
    )
    off = and_(
        off_balance.c.tenant_id == _transaction.c.tenant_id, off_balance.c.transaction_id == _transaction.c.id
    )
    statement = (
        select(_transaction.c.id, _transaction.c.tenant_id, _transaction.c.chain, _transaction.c.seq)
        .select_from(_transaction.outerjoin(counts, of_counts).outerjoin(off_balance, off))
        .where(
            off_balance.c.transaction_id.is_not(None)
            | (func.coalesce(counts.c.found, 0) != _transaction.c.posting_count)
        )
        .order_by(_transaction.c.tenant_id, _transaction.c.chain, _transaction.c.seq)
    )
    if tenant_id is not None:
        statement = statement.where(_transaction.c.tenant_id == tenant_id)
    return list(session.execute(statement))


def _posting_of_transaction() -> Any:
    """A posting's transaction, joined on the tenant too (on Citus, a join of two distributed tables on one
    shard pairs their distribution columns)."""
    return and_(
        _posting.c.tenant_id == _transaction.c.tenant_id, _posting.c.transaction_id == _transaction.c.id
    )
