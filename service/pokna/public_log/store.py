"""The queries on the public log's tables. The sequencer and the read API decide; this only reads and
writes rows, each statement naming its tenant (on Citus: one shard).

The sequencer's, on its async connection inside its transaction (`lock_log`, `checkpoint_at`, `append`); the
reads an audit bundle makes of the log on its async connections (`checkpoint_at`, `leaves_between`,
pokna.bundles.log_part; the nodes of a proof: reads.read_nodes); a checkpoint the read API serves
(`checkpoint_at`). The read API's proofs are read in reads.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection

from pokna_verify.tlog.tree import Node


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


_CHECKPOINT_COLUMNS = "SELECT tree_size, root_hash, note, created_at FROM game_log_checkpoint"
_LATEST_CHECKPOINT = _CHECKPOINT_COLUMNS + " WHERE tenant_id = %(tenant_id)s ORDER BY tree_size DESC LIMIT 1"
_CHECKPOINT_OF_SIZE = _CHECKPOINT_COLUMNS + " WHERE tenant_id = %(tenant_id)s AND tree_size = %(tree_size)s"
_LEAVES = (
    "SELECT leaf_index, game_id, entry FROM game_log_leaf WHERE tenant_id = %(tenant_id)s "
    "AND leaf_index >= %(start)s AND leaf_index < %(end)s ORDER BY leaf_index"
)


async def checkpoint_at(
    connection: AsyncConnection[Any], tenant_id: str, tree_size: int | None = None
) -> StoredCheckpoint | None:
    """The checkpoint of `tree_size` leaves, or the latest one."""
    statement = _LATEST_CHECKPOINT if tree_size is None else _CHECKPOINT_OF_SIZE
    found = await connection.execute(statement, {"tenant_id": tenant_id, "tree_size": tree_size})
    row = await found.fetchone()
    if row is None:
        return None
    size, root_hash, note, created_at = row
    return StoredCheckpoint(int(size), bytes(root_hash), note, created_at)


async def leaves_between(
    connection: AsyncConnection[Any], tenant_id: str, start: int, end: int
) -> list[StoredLeaf]:
    """Leaves [start, end) in index order: what an audit bundle carries of the log, a batch at a time."""
    found = await connection.execute(_LEAVES, {"tenant_id": tenant_id, "start": start, "end": end})
    return [StoredLeaf(int(index), game_id, entry) for index, game_id, entry in await found.fetchall()]


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


async def lock_log(connection: AsyncConnection[Any], tenant_id: str, now: datetime) -> int | None:
    """The log's size under its row lock, held until COMMIT; None if another process holds it (that one
    appends this tenant's games now: this one has nothing to wait for)."""
    values = {"tenant_id": tenant_id, "now": now}
    await connection.execute(_OPEN_LOG, values)
    row = await (await connection.execute(_LOCK_LOG, values)).fetchone()
    return None if row is None else int(row[0])


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
