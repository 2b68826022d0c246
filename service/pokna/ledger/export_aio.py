"""Ledger exports as async generators of text, streamed from the database on psycopg's async connection
(pokna.db.aio): what `GET /v1/ledger/export`, `pokna ledger export`, reconcile and the audit bundle read.
Memory holds one page at any size.

- JSONL: one journal transaction per line, with its chain first and every hashed field plus `hash`; what
  `pokna audit verify` checks offline.
- CSV: one row per posting, its chain in the column before its seq.
- Beancount: open directives, one transaction per journal transaction and, for an export up to every
  chain's head, balance assertions of the stored balances, so `bean-check` itself proves the postings add up.

Every export is in (chain, seq) order: all of chain 0, then chain 1, ... A range is one chain's: `chain`
picks it; `from_seq`/`to_seq` need it (a seq is a position on one chain); with neither, the export is every
chain whole. Each export is bounded by the chain heads read when it starts: the caller holds one
transaction throughout, so postings committed while it streams never make it inconsistent.

Every statement names the tenant (and joins posting to its transaction on the tenant too), so on Citus
each one reaches one shard.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Sequence
from datetime import date, datetime, timedelta
from typing import Any, Final

from psycopg import AsyncConnection
from psycopg.rows import namedtuple_row

from pokna.errors import InvalidRequest
from pokna.ledger import books_repository
from pokna.ledger.accounts import PER_CHAIN_KINDS, sub_account_chain
from pokna.ledger.books_repository import SeqRange
from pokna.ledger.store_postgresql import jsonl_lines, pages
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


_FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r")


def _spreadsheet_text(value: str) -> str:
    """A client's text as a CSV cell a spreadsheet shows as text: one starting like a formula gets a leading
    apostrophe (OWASP's advice on CSV injection), or a reference `=HYPERLINK(...)` would run on opening."""
    return f"'{value}" if value.startswith(_FORMULA_STARTS) else value


def check_chain(chain: int | None) -> None:
    """Refuse a chain outside 0..LEDGER_CHAINS-1, naming the `chain` query parameter."""
    if chain is not None and not 0 <= chain < LEDGER_CHAINS:
        raise InvalidRequest(
            f"chain is one of the ledger's chains, 0 to {LEDGER_CHAINS - 1}; not {chain}", field="query.chain"
        )


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


_HEADS = "SELECT chain, last_seq FROM ledger_head WHERE tenant_id = %(tenant_id)s AND last_seq > 0"
_POSTINGS = """
    SELECT t.chain, t.seq, t.id, t.kind, t.reference, t.created_at, t.hash,
        p.leg, p.account_id, p.amount, p.currency
    FROM journal_transaction AS t
    JOIN posting AS p ON p.tenant_id = t.tenant_id AND p.transaction_id = t.id
    WHERE t.tenant_id = %(tenant_id)s AND t.chain = %(chain)s AND t.seq BETWEEN %(first)s AND %(last)s
    ORDER BY t.seq, p.leg
"""
_ACCOUNTS_WITH_HEADS = """
    SELECT a.id, a.kind, a.external_id, a.currency, a.balance, a.created_at,
        (SELECT json_object_agg(h.chain, h.last_seq) FROM ledger_head AS h
         WHERE h.tenant_id = %(tenant_id)s AND h.last_seq > 0) AS heads
    FROM account AS a WHERE a.tenant_id = %(tenant_id)s ORDER BY a.id
"""
_FIRST_CREATED_AT = """
    SELECT min(created_at) FROM journal_transaction
    WHERE tenant_id = %(tenant_id)s AND chain = ANY(%(chains)s)
        AND seq BETWEEN (%(firsts)s::bigint[])[array_position(%(chains)s, chain)]
            AND (%(lasts)s::bigint[])[array_position(%(chains)s, chain)]
"""
_BALANCES_BEFORE = """
    SELECT p.account_id, p.currency, sum(p.amount) AS total
    FROM posting AS p JOIN journal_transaction AS t ON t.tenant_id = p.tenant_id AND t.id = p.transaction_id
    WHERE t.tenant_id = %(tenant_id)s AND t.chain = ANY(%(chains)s)
        AND t.seq < (%(firsts)s::bigint[])[array_position(%(chains)s, t.chain)]
    GROUP BY p.account_id, p.currency ORDER BY p.account_id
"""


def _ranges_parameters(tenant_id: str, ranges: Sequence[SeqRange]) -> dict[str, Any]:
    return {
        "tenant_id": tenant_id,
        "chains": [seqs.chain for seqs in ranges],
        "firsts": [seqs.first for seqs in ranges],
        "lasts": [seqs.last for seqs in ranges],
    }


async def _rows(connection: AsyncConnection[Any], statement: str, params: dict[str, Any]) -> list[Any]:
    async with connection.cursor(row_factory=namedtuple_row) as cursor:
        await cursor.execute(statement, params)
        return await cursor.fetchall()


async def head_seqs(connection: AsyncConnection[Any], tenant_id: str) -> dict[int, int]:
    """Every chain's head seq as it is now (chains with no transaction left out)."""
    rows = await _rows(connection, _HEADS, {"tenant_id": tenant_id})
    return {int(row.chain): int(row.last_seq) for row in rows}


async def first_created_at(
    connection: AsyncConnection[Any], tenant_id: str, ranges: Sequence[SeqRange]
) -> datetime | None:
    """When the first transaction of the (non-empty) ranges was written; None for no range."""
    if not ranges:
        return None
    rows = await _rows(connection, _FIRST_CREATED_AT, _ranges_parameters(tenant_id, ranges))
    moment: datetime | None = rows[0][0]
    return moment


async def _ranges(
    connection: AsyncConnection[Any],
    tenant_id: str,
    chain: int | None,
    from_seq: int | None,
    to_seq: int | None,
) -> list[SeqRange]:
    """The non-empty ranges (one per chain, ascending) an export of chain `chain` (None: see
    books_repository.selected_chains) from `from_seq` to `to_seq` covers, cut at the chains' heads now."""
    heads = await head_seqs(connection, tenant_id)
    chains = books_repository.selected_chains(chain, from_seq, to_seq, heads)
    return [seqs for seqs in books_repository.seq_ranges(heads, chains, from_seq, to_seq) if not seqs.empty]


async def _postings(
    connection: AsyncConnection[Any], tenant_id: str, ranges: Sequence[SeqRange]
) -> AsyncIterator[list[Any]]:
    """The postings of a page of transactions at a time (store_postgresql.pages), in (chain, seq) and leg
    order, each page read whole before it is handed out."""
    for seqs in ranges:
        for params in pages(tenant_id, seqs):
            yield await _rows(connection, _POSTINGS, params)


async def export_jsonl(
    connection: AsyncConnection[Any],
    tenant_id: str,
    chain: int | None,
    from_seq: int | None,
    to_seq: int | None,
) -> AsyncIterator[str]:
    async for line in jsonl_lines(
        connection, tenant_id, await _ranges(connection, tenant_id, chain, from_seq, to_seq)
    ):
        yield line


async def export_csv(
    connection: AsyncConnection[Any],
    tenant_id: str,
    chain: int | None,
    from_seq: int | None,
    to_seq: int | None,
) -> AsyncIterator[str]:
    """A header, then one row per posting, a page of transactions a chunk. Rows end in CRLF, as RFC 4180
    has them: Python's csv module quotes a field holding any character of the line terminator, so with "\n"
    alone a reference holding a bare CR went out unquoted and split its row in a reader."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    async for page in _postings(
        connection, tenant_id, await _ranges(connection, tenant_id, chain, from_seq, to_seq)
    ):
        writer.writerows(
            (
                row.chain,
                row.seq,
                row.id,
                row.kind,
                _spreadsheet_text(row.reference or ""),
                format_timestamp(row.created_at),
                row.leg,
                row.account_id,
                row.amount,
                row.currency,
                row.hash,
            )
            for row in page
        )
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


async def export_beancount(
    connection: AsyncConnection[Any],
    tenant_id: str,
    chain: int | None,
    from_seq: int | None,
    to_seq: int | None,
) -> AsyncIterator[str]:
    """A Beancount ledger with the same signs as Pokna: wallets positive, external funding negative.

    Every exported chain that starts after its seq 1 contributes to one opening transaction: every
    account's postings on that chain before the range ("opening balances before chain 3 seq 12"; chain 0
    as before chains: "before seq 12"). Chains the export leaves out contribute nothing, so each account's
    balance in the file is what the exported chains moved up to the end of the range.
    An export that reaches the head of every chain that has a transaction ends with balance assertions of
    the stored balances (read in the same statement as the heads, so they describe exactly those
    postings); an export of some chains only has none (the stored balances count the other chains too)."""
    accounts = await _rows(connection, _ACCOUNTS_WITH_HEADS, {"tenant_id": tenant_id})
    heads = {int(key): int(seq) for key, seq in (accounts[0].heads or {}).items()} if accounts else {}
    chains = books_repository.selected_chains(chain, from_seq, to_seq, heads)
    ranges = books_repository.seq_ranges(heads, chains, from_seq, to_seq)
    exported = [seqs for seqs in ranges if not seqs.empty]
    names = {row.id: beancount_account(row.kind, row.id) for row in accounts}
    first_day = await first_created_at(connection, tenant_id, exported)
    currencies = sorted({row.currency for row in accounts})

    yield f'option "title" {beancount_string(f"Pokna ledger of tenant {tenant_id}")}\n'
    for currency in currencies:
        yield f'option "operating_currency" "{currency}"\n'
    yield "\n"
    moments = [row.created_at for row in accounts] + ([first_day] if first_day else [])
    open_day = min(moments).date() if moments else date(1970, 1, 1)
    for row in accounts:
        yield f"{open_day.isoformat()} open {names[row.id]} {row.currency}\n"
        if row.kind in PER_CHAIN_KINDS and (part := sub_account_chain(row.external_id, row.currency)) >= 0:
            # One of the parts, one per chain, of the tenant's one funding (or revenue) account: Beancount
            # adds them up under their parent (Equity:Pokna:ExternalFunding), and this says which is which.
            yield f'  chain: "{part}"\n'
    yield "\n"

    starts = [seqs for seqs in exported if seqs.first > 1]
    if starts:
        sums = await _rows(connection, _BALANCES_BEFORE, _ranges_parameters(tenant_id, starts))
        legs = [row for row in sums if int(row.total) != 0]
        if legs:
            before = ", ".join(chain_label(seqs.chain, seqs.first) for seqs in starts)
            yield f'{open_day.isoformat()} * "opening balances before {before}"\n'
            for leg in legs:
                yield f"  {names[leg.account_id]}  {int(leg.total)} {leg.currency}\n"
            yield "\n"

    last_day = open_day
    async for page in _postings(connection, tenant_id, exported):
        text: list[str] = []
        current: tuple[int, int] | None = None  # a page holds whole transactions: it is paged by seq
        for posting in page:
            if (posting.chain, posting.seq) != current:
                if current is not None:
                    text.append("\n")
                current = (posting.chain, posting.seq)
                day = posting.created_at.date()
                last_day = max(last_day, day)
                narration = (
                    posting.kind if posting.reference is None else f"{posting.kind} {posting.reference}"
                )
                text.append(
                    f"{day.isoformat()} * {beancount_string(narration)}\n"
                    f'  chain: "{posting.chain}"\n  seq: "{posting.seq}"\n  txid: "{posting.id}"\n'
                    f'  hash: "{posting.hash}"\n'
                )
            text.append(f"  {names[posting.account_id]}  {posting.amount} {posting.currency}\n")
        yield "".join(text) + ("\n" if text else "")

    reached = {seqs.chain: seqs.last for seqs in ranges}
    if all(reached.get(head_chain) == seq for head_chain, seq in heads.items()):
        check_day = (last_day + timedelta(days=1)).isoformat()
        for account in accounts:
            yield f"{check_day} balance {names[account.id]}  {account.balance} {account.currency}\n"


EXPORTERS = {"jsonl": export_jsonl, "csv": export_csv, "beancount": export_beancount}
