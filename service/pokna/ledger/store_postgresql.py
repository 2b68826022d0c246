"""The ledger's JSONL export, its lines made from raw columns on PostgreSQL (what a posting sends to
ledger_post() is pokna.ledger.posting_batch)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from json.encoder import encode_basestring
from typing import Any

from psycopg import AsyncConnection

from pokna.ledger.books_repository import SeqRange

# Each transaction's postings come as one flat text array (account_id, amount, currency, ... in leg order):
# ARRAY(subquery) reads them in the index's leg order with no per-transaction sort or aggregate, which
# is most of what json_agg cost.
_JSONL_ROWS = """
    SELECT t.chain, t.seq, t.id, t.kind, t.reference, t.metadata::text,
        to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), t.prev_hash, t.hash,
        ARRAY(
            SELECT unnest(ARRAY[p.account_id, p.amount::text, p.currency])
            FROM posting AS p WHERE p.tenant_id = %(tenant_id)s AND p.transaction_id = t.id ORDER BY p.leg
        )
    FROM journal_transaction AS t
    WHERE t.tenant_id = %(tenant_id)s AND t.chain = %(chain)s AND t.seq BETWEEN %(first)s AND %(last)s
    ORDER BY t.seq
"""

PAGE_TRANSACTIONS = 2000
"""Transactions read per round trip. Each page is read whole before its first line is handed out, so the
connection is idle whenever the caller holds a line: an audit bundle reads the accounts and games
a page touches between lines (an open stream on the same connection would block that query forever: psycopg
holds the connection's lock until a stream ends)."""


async def jsonl_lines(
    connection: AsyncConnection[Any], tenant_id: str, ranges: Sequence[SeqRange]
) -> AsyncIterator[str]:
    """The layout of json_build_object and json_agg: `"key" : value`, items joined by `, `. The lines are
    byte for byte what json_build_object made of the same fields, written here from raw columns (a test
    holds the values equal to the journal's rows). Each line names its chain first (`"chain" : 0` too),
    then the fields as before there were chains.

    Read range by range (one chain each, in the order given: pokna.ledger.export_aio gives them by
    ascending chain), and page by page by seq within a chain (a chain's seqs are dense: it has no gaps),
    each page read whole before its first line is handed out: memory holds one page, the connection is
    idle whenever the caller holds a line, and leaving early leaves no query running.

    Strings go through the standard library's C JSON string encoder, which escapes exactly what
    PostgreSQL's escape_json does (quote, backslash, b f n r t, other controls as lower-case u00xx);
    metadata is the stored JSON text, as json_build_object embeds it.
    """
    for seqs in ranges:
        for params in pages(tenant_id, seqs):
            page = await (await connection.execute(_JSONL_ROWS, params)).fetchall()
            for row in page:
                yield jsonl_line(tenant_id, row)


def pages(tenant_id: str, seqs: SeqRange) -> Iterator[dict[str, Any]]:
    for first in range(seqs.first, seqs.last + 1, PAGE_TRANSACTIONS):
        yield {
            "tenant_id": tenant_id,
            "chain": seqs.chain,
            "first": first,
            "last": min(first + PAGE_TRANSACTIONS - 1, seqs.last),
        }


def jsonl_line(tenant_id: str, row: Sequence[Any]) -> str:
    """One _JSONL_ROWS row as its line (see jsonl_lines)."""
    quote = encode_basestring
    chain, seq, id_, kind, reference, metadata, created_at, prev_hash, hash_, legs = row
    postings = ", ".join(
        f'{{"account_id" : {quote(legs[index])}, "amount" : {legs[index + 1]}, '
        f'"currency" : {quote(legs[index + 2])}}}'
        for index in range(0, len(legs), 3)
    )
    return (
        f'{{"chain" : {chain}, "seq" : {seq}, "id" : {quote(id_)}, "tenant_id" : {quote(tenant_id)}, '
        f'"kind" : {quote(kind)}, '
        f'"reference" : {"null" if reference is None else quote(reference)}, '
        f'"metadata" : {metadata}, "created_at" : {quote(created_at)}, "postings" : [{postings}], '
        f'"prev_hash" : {quote(prev_hash)}, "hash" : {quote(hash_)}}}\n'
    )
