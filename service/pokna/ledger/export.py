"""Ledger exports as generators of text, streamed from the database: memory stays flat at any size.

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
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import Any, Final

from sqlalchemy import Row
from sqlalchemy.orm import Session

from pokna.ledger import books_repository
from pokna.ledger.books_repository import SeqRange
from pokna.ledger.chain import format_timestamp
from pokna.ledger.store import LedgerStore
from pokna.ledger.store_postgresql import PostgresqlLedgerStore

EXPORT_FORMATS: Final = ("jsonl", "csv", "beancount")
_LEDGER_STORE: LedgerStore = PostgresqlLedgerStore()
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
_CSV_BATCH = 5000


def _grouped(session: Session, tenant_id: str, seqs: SeqRange) -> Iterator[list[Row[Any]]]:
    """The postings of each transaction together, in seq order."""
    if seqs.empty:
        return
    group: list[Row[Any]] = []
    for row in books_repository.journal_rows(session, tenant_id, seqs):
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

    The store writes the lines from raw columns, whitespace as json_build_object's.
    """
    seqs = books_repository.seq_range(session, tenant_id, from_seq, to_seq)
    if seqs.empty:
        return iter(())
    return _LEDGER_STORE.jsonl_lines(session, tenant_id, seqs)


def export_csv(
    session: Session, tenant_id: str, *, from_seq: int | None = None, to_seq: int | None = None
) -> Iterator[str]:
    """A header, then one row per posting (RFC 4180 quoting)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    seqs = books_repository.seq_range(session, tenant_id, from_seq, to_seq)
    rows = books_repository.journal_rows(session, tenant_id, seqs) if not seqs.empty else ()
    for count, row in enumerate(rows, start=1):
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
        if count % _CSV_BATCH == 0:
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
    "revenue": "Income:Pokna:Revenue",
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
    accounts = books_repository.accounts_with_head(session, tenant_id)
    head_seq = int(accounts[0].last_seq or 0) if accounts else 0
    seqs = books_repository.seq_range(session, tenant_id, from_seq, to_seq)
    seqs = SeqRange(seqs.first, min(seqs.last, head_seq))
    names = {row.id: beancount_account(row.kind, row.id) for row in accounts}
    first_day = books_repository.first_created_at(session, tenant_id, seqs)
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
    sums = books_repository.balances_before(session, tenant_id, before_seq)
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
