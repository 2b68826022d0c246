"""The queries the ledger still makes through a session, for the background jobs that hold one (`pokna
sweep`'s checkpoints, the backlog gauge): a tenant's existence, the chain heads, checkpoints; and the
statements the async paths share with them (`HEADS`, `INSERT_CHECKPOINT`). The API's reads of the books are
pokna.ledger.reads's, on the driver.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, cast

from psycopg import AsyncConnection
from sqlalchemy import Table, insert, select, text
from sqlalchemy.orm import Session

from pokna.db.models.ledger import LedgerCheckpoint, LedgerHead
from pokna.db.models.tenant import Tenant
from pokna_verify.ledger.chain import GENESIS_HASH

_head = cast(Table, LedgerHead.__table__)
_checkpoint = cast(Table, LedgerCheckpoint.__table__)


def tenant_exists(session: Session, tenant_id: str) -> bool:
    return session.execute(select(Tenant.id).where(Tenant.id == tenant_id)).first() is not None


# --- the chain head and the journal --------------------------------------------------------------------


def read_heads(session: Session, tenant_id: str) -> dict[int, tuple[int, str]]:
    """Every chain's (seq, hash) that has a transaction, by chain; chain 0 always (genesis if empty)."""
    rows = session.execute(
        select(_head.c.chain, _head.c.last_seq, _head.c.last_hash)
        .where(_head.c.tenant_id == tenant_id, _head.c.last_seq > 0)
        .order_by(_head.c.chain)
    )
    return heads_of(rows)


HEADS = (
    "SELECT chain, last_seq, last_hash FROM ledger_head "
    "WHERE tenant_id = %(tenant_id)s AND last_seq > 0 ORDER BY chain"
)


async def read_heads_async(connection: AsyncConnection[Any], tenant_id: str) -> dict[int, tuple[int, str]]:
    """`read_heads` on an async connection, in the caller's transaction (the public log's sequencer)."""
    return heads_of(await (await connection.execute(HEADS, {"tenant_id": tenant_id})).fetchall())


def heads_of(rows: Iterable[Any]) -> dict[int, tuple[int, str]]:
    heads = {int(chain): (int(seq), str(value)) for chain, seq, value in rows}
    return {0: heads.pop(0, (0, GENESIS_HASH))} | heads


def tenant_ids_with_ledgers(session: Session) -> list[str]:
    """Every tenant that may have a ledger, from `tenant` (a reference table: on a distributed database
    every node has it, where listing the heads would ask every node); the heads are then read one by one."""
    return list(session.scalars(select(Tenant.id).order_by(Tenant.id)))


# --- checkpoints ---------------------------------------------------------------------------------------


def insert_checkpoint(session: Session, row: dict[str, Any]) -> None:
    session.execute(insert(_checkpoint), row)


INSERT_CHECKPOINT = (
    "INSERT INTO ledger_checkpoint (id, tenant_id, seq, hash, heads, created_at, key_id, signature) "
    "VALUES (%(id)s, %(tenant_id)s, %(seq)s, %(hash)s, %(heads)s, %(created_at)s, %(key_id)s, %(signature)s)"
)
"""`insert_checkpoint` on the driver (pokna.ledger.checkpoint.take_checkpoint_in); `heads` as JSON."""


def latest_checkpoint(session: Session, tenant_id: str) -> tuple[int, list[dict[str, Any]] | None] | None:
    """(seq, heads) of the newest checkpoint by time (with chains, chain 0's seq no longer orders them)."""
    row = session.execute(
        select(_checkpoint.c.seq, _checkpoint.c.heads)
        .where(_checkpoint.c.tenant_id == tenant_id)
        .order_by(_checkpoint.c.created_at.desc(), _checkpoint.c.id.desc())
        .limit(1)
    ).first()
    return None if row is None else (int(row.seq), row.heads)


# Per chain head: the seq its tenant's newest checkpoint signed (as pokna.ledger.checkpoint._signed_seqs reads
# it: chain 0's `seq` alone for a checkpoint from before there were chains, 0 for a chain it does not name
# or a tenant with none); the transaction after it is the oldest one no checkpoint covers. Every join is on
# `tenant_id`, and the signed seq is read with a JSON path rather than a subquery, so that Citus runs it
# on each shard for that shard's tenants.
_OLDEST_UNSIGNED = text(
    """
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
).columns(oldest_unsigned_at=_checkpoint.c.created_at.type)


def oldest_unsigned_at(session: Session) -> datetime | None:
    """When the oldest journal transaction that no signed checkpoint covers yet was posted, across tenants;
    None when every chain's head is signed."""
    oldest: datetime | None = session.execute(_OLDEST_UNSIGNED).scalar_one()
    return oldest
