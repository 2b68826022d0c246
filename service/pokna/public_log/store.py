"""The queries on the public log's tables. The sequencer and the read API decide; this only reads and
writes rows, each statement naming its tenant (on Citus: one shard).

The sequencer's, on its async connection inside its transaction (`lock_log`, `latest_note`, `append`); the reads an
audit bundle makes of the log on the bundle's session (`checkpoint_at`, `read_nodes`, `leaves_between`,
pokna.bundles.log_part). The read API's own statements are in reads.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from psycopg import AsyncConnection
from sqlalchemy import Table, select, tuple_
from sqlalchemy.orm import Session

from pokna.db.models.game_log import GameLogCheckpoint, GameLogLeaf, GameLogNode
from pokna_verify.tlog.tree import Node

_leaf = cast(Table, GameLogLeaf.__table__)
_node = cast(Table, GameLogNode.__table__)
_checkpoint = cast(Table, GameLogCheckpoint.__table__)


@dataclass(frozen=True)
class StoredCheckpoint:
    tree_size: int
    root_hash: bytes
    note: str
    created_at: datetime


@dataclass(frozen=True)
class StoredLeaf:
    leaf_index: int
    game_id: str
    entry: str


def read_nodes(session: Session, tenant_id: str, nodes: Iterable[Node]) -> dict[Node, bytes]:
    wanted = [(node.level, node.index) for node in nodes]
    if not wanted:
        return {}
    rows = session.execute(
        select(_node.c.level, _node.c.node_index, _node.c.hash).where(
            _node.c.tenant_id == tenant_id, tuple_(_node.c.level, _node.c.node_index).in_(wanted)
        )
    )
    return {Node(int(row.level), int(row.node_index)): bytes(row.hash) for row in rows}


def checkpoint_at(session: Session, tenant_id: str, tree_size: int | None = None) -> StoredCheckpoint | None:
    """The checkpoint of `tree_size` leaves, or the latest one."""
    query = select(
        _checkpoint.c.tree_size, _checkpoint.c.root_hash, _checkpoint.c.note, _checkpoint.c.created_at
    )
    query = query.where(_checkpoint.c.tenant_id == tenant_id)
    if tree_size is None:
        query = query.order_by(_checkpoint.c.tree_size.desc()).limit(1)
    else:
        query = query.where(_checkpoint.c.tree_size == tree_size)
    row = session.execute(query).one_or_none()
    if row is None:
        return None
    return StoredCheckpoint(int(row.tree_size), bytes(row.root_hash), row.note, row.created_at)


def leaves_between(session: Session, tenant_id: str, start: int, end: int) -> list[StoredLeaf]:
    """Leaves [start, end) in index order: what an audit bundle carries of the log, a batch at a time."""
    rows = session.execute(
        select(_leaf.c.leaf_index, _leaf.c.game_id, _leaf.c.entry)
        .where(_leaf.c.tenant_id == tenant_id, _leaf.c.leaf_index >= start, _leaf.c.leaf_index < end)
        .order_by(_leaf.c.leaf_index)
    )
    return [StoredLeaf(int(row.leaf_index), row.game_id, row.entry) for row in rows]


# A tenant's log row is made by the first pass that looks at it, by whichever process gets there first.
_OPEN_LOG = (
    "INSERT INTO game_log (tenant_id, size, updated_at) VALUES (%(tenant_id)s, 0, %(now)s) "
    "ON CONFLICT DO NOTHING"
)
_LOCK_LOG = "SELECT size FROM game_log WHERE tenant_id = %(tenant_id)s FOR UPDATE SKIP LOCKED"
_SET_SIZE = "UPDATE game_log SET size = %(size)s, updated_at = %(now)s WHERE tenant_id = %(tenant_id)s"
_INSERT_NODE = (
    "INSERT INTO game_log_node (tenant_id, level, node_index, hash) "
    "VALUES (%(tenant_id)s, %(level)s, %(node_index)s, %(hash)s)"
)
_INSERT_LEAF = (
    "INSERT INTO game_log_leaf (tenant_id, leaf_index, game_id, entry, appended_at) "
    "VALUES (%(tenant_id)s, %(leaf_index)s, %(game_id)s, %(entry)s, %(now)s)"
)
_INSERT_CHECKPOINT = (
    "INSERT INTO game_log_checkpoint (tenant_id, tree_size, root_hash, note, created_at) "
    "VALUES (%(tenant_id)s, %(tree_size)s, %(root_hash)s, %(note)s, %(created_at)s)"
)
_LATEST_NOTE = (
    "SELECT note FROM game_log_checkpoint WHERE tenant_id = %(tenant_id)s ORDER BY tree_size DESC LIMIT 1"
)


async def lock_log(connection: AsyncConnection[Any], tenant_id: str, now: datetime) -> int | None:
    """The log's size under its row lock, held until COMMIT; None if another process holds it (that one
    appends this tenant's games now: this one has nothing to wait for)."""
    values = {"tenant_id": tenant_id, "now": now}
    await connection.execute(_OPEN_LOG, values)
    row = await (await connection.execute(_LOCK_LOG, values)).fetchone()
    return None if row is None else int(row[0])


async def latest_note(connection: AsyncConnection[Any], tenant_id: str) -> str | None:
    row = await (await connection.execute(_LATEST_NOTE, {"tenant_id": tenant_id})).fetchone()
    return None if row is None else str(row[0])


async def append(
    connection: AsyncConnection[Any],
    tenant_id: str,
    nodes: Mapping[Node, bytes],
    leaves: Sequence[StoredLeaf],
    checkpoint: StoredCheckpoint,
) -> None:
    """The new nodes and leaves, the checkpoint signed over them and the log's new size, in the caller's
    transaction: one row a statement, each naming the tenant (one shard on Citus)."""
    now, tenant = checkpoint.created_at, {"tenant_id": tenant_id}
    async with connection.cursor() as cursor:
        await cursor.executemany(
            _INSERT_NODE,
            [
                {**tenant, "level": node.level, "node_index": node.index, "hash": value}
                for node, value in nodes.items()
            ],
        )
        await cursor.executemany(_INSERT_LEAF, [{**tenant, **vars(leaf), "now": now} for leaf in leaves])
    await connection.execute(_INSERT_CHECKPOINT, {**tenant, **vars(checkpoint)})
    await connection.execute(_SET_SIZE, {**tenant, "size": checkpoint.tree_size, "now": now})
