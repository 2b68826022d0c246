"""Every query the ledger makes through a session: accounts (opening one is the only write here), the chain
heads and checkpoints (the API's reads of the books are pokna.ledger.reads's, on the driver). Services decide; this module only reads and writes rows. Postings are written by
ledger_post() alone, called by the game's game_write() and the deposits' ledger_move(); the JSONL export's
query is its store's (pokna.ledger.store).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from psycopg import AsyncConnection
from sqlalchemy import Table, bindparam, insert, select, text
from sqlalchemy.orm import Session

from pokna.db.models.ledger import Account, JournalPosting, JournalTransaction, LedgerCheckpoint, LedgerHead
from pokna.db.models.tenant import Tenant
from pokna_verify.ledger.chain import GENESIS_HASH

_account = cast(Table, Account.__table__)
_transaction = cast(Table, JournalTransaction.__table__)
_posting = cast(Table, JournalPosting.__table__)
_head = cast(Table, LedgerHead.__table__)
_checkpoint = cast(Table, LedgerCheckpoint.__table__)


# --- accounts ------------------------------------------------------------------------------------------


def tenant_exists(session: Session, tenant_id: str) -> bool:
    return session.execute(select(Tenant.id).where(Tenant.id == tenant_id)).first() is not None


# An account opened twice under one external id is found, not duplicated: ON CONFLICT DO NOTHING.
# VALUES, not a SELECT that checks the tenant in the same statement: on Citus an INSERT ... SELECT from a
# reference table goes through the coordinator and commits in two phases; a VALUES row goes to its shard.
_INSERT_ACCOUNT = text(
    """
    INSERT INTO account (id, tenant_id, kind, currency, external_id, balance, created_at)
    VALUES (:id, :tenant_id, :kind, :currency, :external_id, 0, :created_at)
    ON CONFLICT (tenant_id, kind, external_id) DO NOTHING
    RETURNING id
    """
).bindparams(
    *(bindparam(name, type_=_account.c[name].type) for name in ("id", "tenant_id", "kind", "currency")),
    bindparam("external_id", type_=_account.c.external_id.type),
    bindparam("created_at", type_=_account.c.created_at.type),
)


def insert_account(session: Session, values: dict[str, Any]) -> bool:
    """Insert the account (with balance 0) if its tenant exists and no account of that tenant and kind
    already has its external id; False if not. Nothing is raised, so the caller's transaction stays
    usable, and concurrent inserts of the same account neither fail nor both succeed (tenants are never
    deleted, so one that exists at the check still does at the insert)."""
    if not tenant_exists(session, values["tenant_id"]):
        return False
    return session.execute(_INSERT_ACCOUNT, values).first() is not None


def find_account(session: Session, tenant_id: str, kind: str, external_id: str) -> Account | None:
    return session.scalars(
        select(Account).where(
            Account.tenant_id == tenant_id, Account.kind == kind, Account.external_id == external_id
        )
    ).one_or_none()


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


TENANT_IDS = "SELECT id FROM tenant ORDER BY id"
"""`tenant_ids_with_ledgers` on the driver."""


# --- checkpoints ---------------------------------------------------------------------------------------


def insert_checkpoint(session: Session, row: dict[str, Any]) -> None:
    session.execute(insert(_checkpoint), row)


INSERT_CHECKPOINT = (
    "INSERT INTO ledger_checkpoint (id, tenant_id, seq, hash, heads, created_at, key_id, signature) "
    "VALUES (%(id)s, %(tenant_id)s, %(seq)s, %(hash)s, %(heads)s, %(created_at)s, %(key_id)s, %(signature)s)"
)
"""`insert_checkpoint` on the driver (pokna.ledger.checkpoint.take_checkpoint_in); `heads` as JSON."""


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
