"""The ledger's statements that more than one module sends (the chain heads, checkpoints, the oldest
unsigned posting), each on psycopg's async connection. The API's reads of the books are
pokna.ledger.reads's; the exports' pokna.ledger.export_aio's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from psycopg import AsyncConnection

from pokna_verify.ledger.chain import GENESIS_HASH

HEADS = (
    "SELECT chain, last_seq, last_hash FROM ledger_head "
    "WHERE tenant_id = %(tenant_id)s AND last_seq > 0 ORDER BY chain"
)


async def read_heads_async(connection: AsyncConnection[Any], tenant_id: str) -> dict[int, tuple[int, str]]:
    """Every chain's (seq, hash) that has a transaction, by chain; chain 0 always (genesis if empty). In the
    caller's transaction (a checkpoint's, the public log's sequencer's)."""
    return heads_of(await (await connection.execute(HEADS, {"tenant_id": tenant_id})).fetchall())


def heads_of(rows: Iterable[Any]) -> dict[int, tuple[int, str]]:
    heads = {int(chain): (int(seq), str(value)) for chain, seq, value in rows}
    return {0: heads.pop(0, (0, GENESIS_HASH))} | heads


INSERT_CHECKPOINT = (
    "INSERT INTO ledger_checkpoint (id, tenant_id, seq, hash, heads, created_at, key_id, signature) "
    "VALUES (%(id)s, %(tenant_id)s, %(seq)s, %(hash)s, %(heads)s, %(created_at)s, %(key_id)s, %(signature)s)"
)
"""A signed checkpoint (pokna.ledger.checkpoint); `heads` as JSON."""


LATEST_CHECKPOINT = (
    "SELECT seq, heads FROM ledger_checkpoint WHERE tenant_id = %(tenant_id)s "
    "ORDER BY created_at DESC, id DESC LIMIT 1"
)
"""(seq, heads) of the tenant's newest checkpoint by time (with chains, chain 0's seq no longer orders them)."""


# Per chain head: the seq its tenant's newest checkpoint signed (as pokna.ledger.checkpoint._signed_seqs reads
# it: chain 0's `seq` alone for a checkpoint from before there were chains, 0 for a chain it does not name
# or a tenant with none); the transaction after it is the oldest one no checkpoint covers. Every join is on
# `tenant_id`, and the signed seq is read with a JSON path rather than a subquery, so that Citus runs it
# on each shard for that shard's tenants.
OLDEST_UNSIGNED = """
    SELECT min(t.created_at) AS oldest_unsigned_at
    FROM (
        SELECT h.tenant_id, h.chain, h.last_seq, coalesce(
            CASE WHEN latest.heads IS NULL THEN CASE WHEN h.chain = 0 THEN latest.seq END
            ELSE jsonb_path_query_first(
                latest.heads::jsonb, '$[*] ? (@.chain == $chain).seq', jsonb_build_object('chain', h.chain)
            )::bigint END,
            0) AS signed_seq
        FROM ledger_head AS h
        LEFT JOIN LATERAL (
            SELECT c.seq, c.heads FROM ledger_checkpoint AS c
            WHERE c.tenant_id = h.tenant_id
            ORDER BY c.created_at DESC, c.id DESC
            LIMIT 1
        ) AS latest ON true
    ) AS head
    JOIN journal_transaction AS t
        ON t.tenant_id = head.tenant_id AND t.chain = head.chain AND t.seq = head.signed_seq + 1
    WHERE head.last_seq > head.signed_seq
"""
