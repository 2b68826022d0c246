"""Ledger exports as generators of text, streamed from the database: memory stays flat at any size.

- JSONL: one journal transaction per line, with its chain first and every hashed field plus `hash`; what
  `pokna audit verify` checks offline.
- CSV: one row per posting, its chain in the column before its seq.
- Beancount: open directives, one transaction per journal transaction and, for an export up to every
  chain's head, balance assertions of the stored balances, so `bean-check` itself proves the postings add up.

Every export is in (chain, seq) order: all of chain 0, then chain 1, ... A range is one chain's: `chain`
picks it; `from_seq`/`to_seq` need it (a seq is a position on one chain); with neither, the export is every
chain whole. Each export is bounded by the chain heads read
when it starts, so postings committed while it streams never make it inconsistent.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import Any, Final

from sqlalchemy import Row
from sqlalchemy.orm import Session

from pokna.errors import InvalidRequest
from pokna.ledger import books_repository
from pokna.ledger.accounts import PER_CHAIN_KINDS, sub_account_chain
from pokna.ledger.books_repository import SeqRange
from pokna.ledger.store_postgresql import jsonl_lines
from pokna_verify.ledger.chain import LEDGER_CHAINS, chain_label, format_timestamp

EXPORT_FORMATS: Final = ("jsonl", "csv", "beancount")
CSV_COLUMNS: Final = (
    "chain",
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


def check_chain(chain: int | None) -> None:
    """Refuse a chain outside 0..LEDGER_CHAINS-1, naming the `chain` query parameter."""
    if chain is not None and not 0 <= chain < LEDGER_CHAINS:
        raise InvalidRequest(
            f"chain is one of the ledger's chains, 0 to {LEDGER_CHAINS - 1}; not {chain}", field="query.chain"
        )


def _grouped(session: Session, tenant_id: str, ranges: list[SeqRange]) -> Iterator[list[Row[Any]]]:
    """The postings of each transaction together, in (chain, seq) order."""
    group: list[Row[Any]] = []
    for row in books_repository.journal_rows(session, tenant_id, ranges):
        if group and (group[0].chain, group[0].seq) != (row.chain, row.seq):
            yield group
            group = []
        group.append(row)
    if group:
        yield group


def export_jsonl(
    session: Session,
    tenant_id: str,
    *,
    chain: int | None = None,
    from_seq: int | None = None,
    to_seq: int | None = None,
) -> Iterator[str]:
    """One JSON object per line, in (chain, seq) order, each ending in a newline.

    The store writes the lines from raw columns, whitespace as json_build_object's.
    """
    check_chain(chain)
    ranges = books_repository.seq_range(session, tenant_id, from_seq, to_seq, chain)
    if not ranges:
        return iter(())
    return jsonl_lines(session, tenant_id, ranges)


def export_csv(
    session: Session,
    tenant_id: str,
    *,
    chain: int | None = None,
    from_seq: int | None = None,
    to_seq: int | None = None,
) -> Iterator[str]:
    """A header, then one row per posting (RFC 4180 quoting)."""
    check_chain(chain)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    ranges = books_repository.seq_range(session, tenant_id, from_seq, to_seq, chain)
    for count, row in enumerate(books_repository.journal_rows(session, tenant_id, ranges), start=1):
        writer.writerow(
            (
                row.chain,
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


def beancount_string(value: str) -> str:
    cleaned = value.replace("\\", "/").replace('"', "'").replace("\n", " ").replace("\r", " ")
    return f'"{cleaned}"'


def export_beancount(
    session: Session,
    tenant_id: str,
    *,
    chain: int | None = None,
    from_seq: int | None = None,
    to_seq: int | None = None,
) -> Iterator[str]:
    """A Beancount ledger with the same signs as Pokna: wallets positive, external funding negative.

    Every exported chain that starts after its seq 1 contributes to one opening transaction: every
    account's postings on that chain before the range ("opening balances before chain 3 seq 12"; chain 0
    as before chains: "before seq 12"). Chains the export leaves out contribute nothing, so each account's
    balance in the file is what the exported chains moved up to the end of the range.
    An export that reaches the head of every chain that has a transaction ends with balance assertions of
    the stored balances (read in the same statement as the heads, so they describe exactly those
    postings); an export of some chains only has none (the stored balances count the other chains too).
    """
    check_chain(chain)
    accounts, heads = books_repository.accounts_with_heads(session, tenant_id)
    chains = books_repository.selected_chains(chain, from_seq, to_seq, heads)
    ranges = books_repository.seq_ranges(heads, chains, from_seq, to_seq)
    exported = [seqs for seqs in ranges if not seqs.empty]
    names = {row.id: beancount_account(row.kind, row.id) for row in accounts}
    first_day = books_repository.first_created_at(session, tenant_id, exported)
    currencies = sorted({row.currency for row in accounts})

    yield f'option "title" {beancount_string(f"Pokna ledger of tenant {tenant_id}")}\n'
    for currency in currencies:
        yield f'option "operating_currency" "{currency}"\n'
    yield "\n"
    open_day = earliest_day([row.created_at for row in accounts], first_day)
    for row in accounts:
        yield f"{open_day.isoformat()} open {names[row.id]} {row.currency}\n"
        if row.kind in PER_CHAIN_KINDS and (part := sub_account_chain(row.external_id, row.currency)) >= 0:
            # One of the parts, one per chain, of the tenant's one funding (or revenue) account: Beancount
            # adds them up under their parent (Equity:Pokna:ExternalFunding), and this says which is which.
            yield f'  chain: "{part}"\n'
    yield "\n"

    yield from _opening_balances(session, tenant_id, exported, names, open_day)

    last_day = open_day
    for group in _grouped(session, tenant_id, exported):
        first = group[0]
        day = first.created_at.date()
        last_day = max(last_day, day)
        narration = first.kind if first.reference is None else f"{first.kind} {first.reference}"
        yield (
            f"{day.isoformat()} * {beancount_string(narration)}\n"
            f'  chain: "{first.chain}"\n  seq: "{first.seq}"\n  txid: "{first.id}"\n  hash: "{first.hash}"\n'
        )
        for posting in group:
            yield f"  {names[posting.account_id]}  {posting.amount} {posting.currency}\n"
        yield "\n"

    reached = {seqs.chain: seqs.last for seqs in ranges}
    if all(reached.get(head_chain) == seq for head_chain, seq in heads.items()):
        check_day = (last_day + timedelta(days=1)).isoformat()
        for account in accounts:
            yield f"{check_day} balance {names[account.id]}  {account.balance} {account.currency}\n"


def earliest_day(account_days: list[datetime], first_transaction: datetime | None) -> date:
    moments = [*account_days, *([first_transaction] if first_transaction else [])]
    return min(moments).date() if moments else date(1970, 1, 1)


def _opening_balances(
    session: Session, tenant_id: str, ranges: list[SeqRange], names: dict[str, str], day: date
) -> Iterator[str]:
    starts = [seqs for seqs in ranges if seqs.first > 1]
    if not starts:
        return
    sums = books_repository.balances_before(session, tenant_id, starts)
    legs = [row for row in sums if int(row.total) != 0]
    if not legs:
        return
    before = ", ".join(chain_label(seqs.chain, seqs.first) for seqs in starts)
    yield f'{day.isoformat()} * "opening balances before {before}"\n'
    for leg in legs:
        yield f"  {names[leg.account_id]}  {int(leg.total)} {leg.currency}\n"
    yield "\n"


def export_lines(
    session: Session,
    tenant_id: str,
    export_format: str,
    *,
    chain: int | None = None,
    from_seq: int | None = None,
    to_seq: int | None = None,
) -> Iterator[str]:
    exporters = {"jsonl": export_jsonl, "csv": export_csv, "beancount": export_beancount}
    if export_format not in exporters:
        raise ValueError(f"unknown export format {export_format!r}; one of {', '.join(EXPORT_FORMATS)}")
    # Checked now, not when the first line is asked for: a streamed answer that has begun cannot become
    # a 422 any more (CSV and Beancount are generators, which run nothing until then).
    check_chain(chain)
    books_repository.check_seq_bounds(chain, from_seq, to_seq)
    return exporters[export_format](session, tenant_id, chain=chain, from_seq=from_seq, to_seq=to_seq)
