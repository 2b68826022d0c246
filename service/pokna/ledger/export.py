"""Ledger exports as generators of text, streamed from a server-side cursor: memory stays flat at any size.

- JSONL: one journal transaction per line, with every hashed field plus `hash`; what `pokna audit verify`
  checks offline.
- CSV: one row per posting.
- Beancount: open directives, one transaction per journal transaction and, for an export up to the chain
  head, balance assertions of the stored balances, so `bean-check` itself proves the postings add up.

Each export is bounded by the chain head read when it starts, so postings committed while it streams
never make it inconsistent.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Final, cast

from sqlalchemy import Row, Select, Table, func, select, text
from sqlalchemy.orm import Session

from pokna.db.models.ledger import Account, JournalPosting, JournalTransaction, LedgerHead
from pokna.ledger.chain import format_timestamp

EXPORT_FORMATS: Final = ("jsonl", "csv", "beancount")
CSV_COLUMNS: Final = (
    "seq",
    "transaction_id",
    "kind",
    "reference",
    "created_at",
    "leg",
    "account_id",
    "amount",
    "currency",
    "transaction_hash",
)
_BATCH = 5000
_transaction = cast(Table, JournalTransaction.__table__)
_posting = cast(Table, JournalPosting.__table__)
_account = cast(Table, Account.__table__)
_head = cast(Table, LedgerHead.__table__)


@dataclass(frozen=True)
class SeqRange:
    first: int
    last: int

    @property
    def empty(self) -> bool:
        return self.first > self.last


def _seq_range(session: Session, tenant_id: str, from_seq: int | None, to_seq: int | None) -> SeqRange:
    head = session.execute(select(_head.c.last_seq).where(_head.c.tenant_id == tenant_id)).scalar()
    last = int(head or 0)
    if to_seq is not None:
        last = min(last, to_seq)
    return SeqRange(max(from_seq or 1, 1), last)


def _rows(session: Session, tenant_id: str, seqs: SeqRange) -> Iterator[Row[Any]]:
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


def _grouped(session: Session, tenant_id: str, seqs: SeqRange) -> Iterator[list[Row[Any]]]:
    """The postings of each transaction together, in seq order."""
    if seqs.empty:
        return
    group: list[Row[Any]] = []
    for row in _rows(session, tenant_id, seqs):
        if group and group[0].seq != row.seq:
            yield group
            group = []
        group.append(row)
    if group:
        yield group


def transaction_line(tenant_id: str, group: list[Row[Any]]) -> dict[str, Any]:
    first = group[0]
    return {
        "seq": first.seq,
        "id": first.id,
        "tenant_id": tenant_id,
        "kind": first.kind,
        "reference": first.reference,
        "metadata": first.metadata,
        "created_at": format_timestamp(first.created_at),
        "postings": [
            {"account_id": row.account_id, "amount": row.amount, "currency": row.currency} for row in group
        ],
        "prev_hash": first.prev_hash,
        "hash": first.hash,
    }


def export_jsonl(
    session: Session, tenant_id: str, *, from_seq: int | None = None, to_seq: int | None = None
) -> Iterator[str]:
    """One JSON object per line, in seq order, each ending in a newline.

    On PostgreSQL the database builds each line (the same fields and values; only the whitespace differs)
    and Python only streams them: four times faster than decoding and re-encoding every row here.
    """
    seqs = _seq_range(session, tenant_id, from_seq, to_seq)
    if seqs.empty:
        return iter(())
    if session.get_bind().dialect.name == "postgresql":
        return _jsonl_postgresql(session, tenant_id, seqs)
    return _jsonl_generic(session, tenant_id, seqs)


def _jsonl_generic(session: Session, tenant_id: str, seqs: SeqRange) -> Iterator[str]:
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    for group in _grouped(session, tenant_id, seqs):
        yield encode(transaction_line(tenant_id, group)) + "\n"


# `\:` keeps SQLAlchemy from reading the time format's colons as bind parameters.
_JSONL_LINES_POSTGRESQL = text(
    r"""
    SELECT json_build_object(
        'seq', t.seq, 'id', t.id, 'tenant_id', t.tenant_id, 'kind', t.kind, 'reference', t.reference,
        'metadata', t.metadata,
        'created_at', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24\:MI\:SS.US"Z"'),
        'postings', (
            SELECT json_agg(
                json_build_object('account_id', p.account_id, 'amount', p.amount, 'currency', p.currency)
                ORDER BY p.leg
            )
            FROM posting AS p WHERE p.transaction_id = t.id
        ),
        'prev_hash', t.prev_hash, 'hash', t.hash
    )::text
    FROM journal_transaction AS t
    WHERE t.tenant_id = :tenant_id AND t.seq BETWEEN :first AND :last
    ORDER BY t.seq
    """
)


def _jsonl_postgresql(session: Session, tenant_id: str, seqs: SeqRange) -> Iterator[str]:
    result = session.execute(
        _JSONL_LINES_POSTGRESQL,
        {"tenant_id": tenant_id, "first": seqs.first, "last": seqs.last},
        execution_options={"yield_per": _BATCH},
    )
    try:
        for line in result.scalars():
            yield f"{line}\n"
    finally:
        result.close()


def export_csv(
    session: Session, tenant_id: str, *, from_seq: int | None = None, to_seq: int | None = None
) -> Iterator[str]:
    """A header, then one row per posting (RFC 4180 quoting)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    seqs = _seq_range(session, tenant_id, from_seq, to_seq)
    for count, row in enumerate(_rows(session, tenant_id, seqs) if not seqs.empty else (), start=1):
        writer.writerow(
            (
                row.seq,
                row.id,
                row.kind,
                row.reference or "",
                format_timestamp(row.created_at),
                row.leg,
                row.account_id,
                row.amount,
                row.currency,
                row.hash,
            )
        )
        if count % _BATCH == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


# --- Beancount ----------------------------------------------------------------------------------------

_BEANCOUNT_ROOTS: Final = {
    "player_wallet": "Assets:Pokna:PlayerWallet",
    "game_pot": "Assets:Pokna:GamePot",
    "house": "Assets:Pokna:House",
    "external_funding": "Equity:Pokna:ExternalFunding",
}


def beancount_account(kind: str, account_id: str) -> str:
    """`acct_<hex>` -> `Assets:Pokna:PlayerWallet:Acct-<hex>` (Beancount names allow no underscores)."""
    prefix, _, rest = account_id.partition("_")
    return f"{_BEANCOUNT_ROOTS[kind]}:{prefix.capitalize()}-{rest}"


def _beancount_string(value: str) -> str:
    cleaned = value.replace("\\", "/").replace('"', "'").replace("\n", " ").replace("\r", " ")
    return f'"{cleaned}"'


def export_beancount(
    session: Session, tenant_id: str, *, from_seq: int | None = None, to_seq: int | None = None
) -> Iterator[str]:
    """A Beancount ledger with the same signs as Pokna: wallets positive, external funding negative.

    An export starting after seq 1 opens with one transaction carrying every account's balance before it.
    An export up to the chain head ends with balance assertions of the stored balances (read in the same
    statement as the head, so they describe exactly the exported postings).
    """
    accounts = session.execute(
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
    ).all()
    head_seq = int(accounts[0].last_seq or 0) if accounts else 0
    seqs = _seq_range(session, tenant_id, from_seq, to_seq)
    seqs = SeqRange(seqs.first, min(seqs.last, head_seq))
    names = {row.id: beancount_account(row.kind, row.id) for row in accounts}
    first_day = session.execute(
        select(func.min(_transaction.c.created_at)).where(
            _transaction.c.tenant_id == tenant_id, _transaction.c.seq.between(seqs.first, seqs.last)
        )
    ).scalar()
    currencies = sorted({row.currency for row in accounts})

    yield f'option "title" {_beancount_string(f"Pokna ledger of tenant {tenant_id}")}\n'
    for currency in currencies:
        yield f'option "operating_currency" "{currency}"\n'
    yield "\n"
    open_day = _earliest_day([row.created_at for row in accounts], first_day)
    for row in accounts:
        yield f"{open_day.isoformat()} open {names[row.id]} {row.currency}\n"
    yield "\n"

    if seqs.first > 1 and not seqs.empty:
        yield from _opening_balances(session, tenant_id, seqs.first, names, open_day)

    last_day = open_day
    for group in _grouped(session, tenant_id, seqs):
        first = group[0]
        day = first.created_at.date()
        last_day = max(last_day, day)
        narration = first.kind if first.reference is None else f"{first.kind} {first.reference}"
        yield (
            f"{day.isoformat()} * {_beancount_string(narration)}\n"
            f'  seq: "{first.seq}"\n  txid: "{first.id}"\n  hash: "{first.hash}"\n'
        )
        for posting in group:
            yield f"  {names[posting.account_id]}  {posting.amount} {posting.currency}\n"
        yield "\n"

    if seqs.last == head_seq:
        check_day = (last_day + timedelta(days=1)).isoformat()
        for account in accounts:
            yield f"{check_day} balance {names[account.id]}  {account.balance} {account.currency}\n"


def _earliest_day(account_days: list[datetime], first_transaction: datetime | None) -> date:
    moments = [*account_days, *([first_transaction] if first_transaction else [])]
    return min(moments).date() if moments else date(1970, 1, 1)


def _opening_balances(
    session: Session, tenant_id: str, before_seq: int, names: dict[str, str], day: date
) -> Iterator[str]:
    sums = session.execute(
        select(_posting.c.account_id, _posting.c.currency, func.sum(_posting.c.amount).label("total"))
        .join(_transaction, _transaction.c.id == _posting.c.transaction_id)
        .where(_transaction.c.tenant_id == tenant_id, _transaction.c.seq < before_seq)
        .group_by(_posting.c.account_id, _posting.c.currency)
        .order_by(_posting.c.account_id)
    ).all()
    legs = [row for row in sums if int(row.total) != 0]
    if not legs:
        return
    yield f'{day.isoformat()} * "opening balances before seq {before_seq}"\n'
    for leg in legs:
        yield f"  {names[leg.account_id]}  {int(leg.total)} {leg.currency}\n"
    yield "\n"


def export_lines(
    session: Session,
    tenant_id: str,
    export_format: str,
    *,
    from_seq: int | None = None,
    to_seq: int | None = None,
) -> Iterator[str]:
    exporters = {"jsonl": export_jsonl, "csv": export_csv, "beancount": export_beancount}
    if export_format not in exporters:
        raise ValueError(f"unknown export format {export_format!r}; one of {', '.join(EXPORT_FORMATS)}")
    return exporters[export_format](session, tenant_id, from_seq=from_seq, to_seq=to_seq)
