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
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from json.encoder import encode_basestring
from typing import Any, Final, cast

import psycopg
from sqlalchemy import Row, Select, Table, func, select
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
_STREAM_ROWS = 2000
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

    On PostgreSQL the lines are byte for byte what `json_build_object` made of the same fields (the same
    values as the portable exporter; only the whitespace differs), written here from raw columns.
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


# Each transaction's postings come as one flat text array (account_id, amount, currency, ... in leg order):
# ARRAY(subquery) reads them in the index's leg order with no per-transaction sort or aggregate, which
# is most of what json_agg cost. The rows are streamed (no server-side cursor), so the database produces
# the next rows while Python writes these.
_JSONL_ROWS_POSTGRESQL = """
    SELECT t.seq, t.id, t.kind, t.reference, t.metadata::text,
        to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), t.prev_hash, t.hash,
        ARRAY(
            SELECT unnest(ARRAY[p.account_id, p.amount::text, p.currency])
            FROM posting AS p WHERE p.transaction_id = t.id ORDER BY p.leg
        )
    FROM journal_transaction AS t
    WHERE t.tenant_id = %(tenant_id)s AND t.seq BETWEEN %(first)s AND %(last)s
    ORDER BY t.seq
"""


def _stream_rows() -> int:
    """Rows fetched per chunk: chunked streaming needs libpq 17 (psycopg's binary wheels bundle a newer
    one); an older system libpq streams row by row, which is correct, only slower."""
    return _STREAM_ROWS if psycopg.pq.version() >= 170000 else 1


def _jsonl_postgresql(session: Session, tenant_id: str, seqs: SeqRange) -> Iterator[str]:
    """The layout of json_build_object and json_agg: `"key" : value`, items joined by `, `.

    While this generator is suspended the session's connection is busy streaming: the caller must not use
    the session until the export is drained or closed (every caller writes it out first).

    Strings go through the standard library's C JSON string encoder, which escapes exactly what
    PostgreSQL's escape_json does (quote, backslash, b f n r t, other controls as lower-case u00xx);
    metadata is the stored JSON text, as json_build_object embeds it.
    """
    quote = encode_basestring
    tenant = quote(tenant_id)
    # Leaving the stream early cancels the query, which fails the transaction: the savepoint takes the
    # caller's transaction back to before the export.
    savepoint = session.begin_nested()
    connection = session.connection().connection.driver_connection
    if not isinstance(connection, psycopg.Connection):
        raise TypeError(f"the PostgreSQL export needs psycopg 3, not {type(connection).__name__}")
    params = {"tenant_id": tenant_id, "first": seqs.first, "last": seqs.last}
    try:
        with connection.cursor() as cursor:
            for seq, id_, kind, reference, metadata, created_at, prev_hash, hash_, legs in cursor.stream(
                _JSONL_ROWS_POSTGRESQL, params, size=_stream_rows()
            ):
                postings = ", ".join(
                    f'{{"account_id" : {quote(legs[index])}, "amount" : {legs[index + 1]}, '
                    f'"currency" : {quote(legs[index + 2])}}}'
                    for index in range(0, len(legs), 3)
                )
                yield (
                    f'{{"seq" : {seq}, "id" : {quote(id_)}, "tenant_id" : {tenant}, "kind" : {quote(kind)}, '
                    f'"reference" : {"null" if reference is None else quote(reference)}, '
                    f'"metadata" : {metadata}, "created_at" : {quote(created_at)}, "postings" : [{postings}], '
                    f'"prev_hash" : {quote(prev_hash)}, "hash" : {quote(hash_)}}}\n'
                )
    except BaseException:
        savepoint.rollback()
        raise
    savepoint.commit()


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
