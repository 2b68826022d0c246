"""What the public read API answers: checkpoints as signed, and proofs made from the stored subtrees.

A proof is asked for at a tree size, so a witness or player holding the checkpoint of that size can check
it against the root they already trust; any size up to the log's is answered (the root at that size is in
the answer too, for whoever holds no checkpoint of it). Bad sizes are refused naming the parameter.

On the async road (pokna.db.aio), driver SQL on the request's autocommit connection: a checkpoint is one
round trip, a consistency proof one (the log's size and the nodes in one pipeline: which nodes a proof
needs depends on its sizes alone), an inclusion proof two (the leaf and the size, then the nodes under
them). Each statement reads committed rows of its own: a leaf is committed with the size that holds it and
the nodes above it (pokna.public_log.sequencer), and nothing of a log is ever rewritten, so what a later
statement reads still agrees with what an earlier one did.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection, AsyncCursor

from pokna.errors import InvalidRequest, NotFound
from pokna.public_log import store
from pokna_verify.tlog.hashing import leaf_hash
from pokna_verify.tlog.tree import (
    LeafRange,
    Node,
    consistency_ranges,
    frontier,
    inclusion_ranges,
    nodes_for,
    proof_hashes,
    root_hash,
)

_LATEST_CHECKPOINT = (
    "SELECT note, tree_size FROM game_log_checkpoint WHERE tenant_id = %(tenant_id)s "
    "ORDER BY tree_size DESC LIMIT 1"
)
_LEAF_OF_GAME = (
    "SELECT leaf_index, entry FROM game_log_leaf WHERE tenant_id = %(tenant_id)s AND game_id = %(game_id)s"
)
_LOG_SIZE = "SELECT size FROM game_log WHERE tenant_id = %(tenant_id)s"
_NODES = (
    "SELECT level, node_index, hash FROM game_log_node WHERE tenant_id = %(tenant_id)s "
    "AND (level, node_index) IN (SELECT * FROM unnest(%(levels)s::smallint[], %(indexes)s::bigint[]))"
)


@dataclass(frozen=True)
class Inclusion:
    game_id: str
    leaf_index: int
    tree_size: int
    entry: str
    leaf_hash: bytes
    root_hash: bytes
    path: list[bytes]


@dataclass(frozen=True)
class Consistency:
    first: int
    second: int
    first_root_hash: bytes
    second_root_hash: bytes
    path: list[bytes]


async def latest_checkpoint(connection: AsyncConnection[Any], tenant_id: str) -> str:
    found = await store.checkpoint_at(connection, tenant_id)
    if found is None:
        raise NotFound(f"tenant {tenant_id} has no game in its public log yet")
    return found.note


async def checkpoint_of_size(connection: AsyncConnection[Any], tenant_id: str, tree_size: int) -> str:
    found = await store.checkpoint_at(connection, tenant_id, tree_size)
    if found is None:
        raise NotFound(f"tenant {tenant_id}'s public log signed no checkpoint of {tree_size} games")
    return found.note


async def inclusion(
    connection: AsyncConnection[Any], tenant_id: str, game_id: str, tree_size: int | None
) -> Inclusion:
    """The leaf is read before the size: a leaf seen is in every size read after it."""
    values = {"tenant_id": tenant_id, "game_id": game_id}
    async with connection.pipeline():
        leaf_rows = await connection.execute(_LEAF_OF_GAME, values)
        size_rows = await connection.execute(_LOG_SIZE, values)
    leaf, log_size = await leaf_rows.fetchone(), await size_rows.fetchone()
    if leaf is None:
        raise NotFound(
            f"game {game_id} is not in tenant {tenant_id}'s public log (not finished or not logged yet)"
        )
    leaf_index, entry = int(leaf[0]), str(leaf[1])
    size = _size_within(0 if log_size is None else int(log_size[0]), tree_size)
    if leaf_index >= size:
        raise NotFound(f"game {game_id} is leaf {leaf_index}, logged after the tree of {size} games")
    return await _proven(connection, tenant_id, game_id, leaf_index, entry, size)


async def latest_inclusion(
    connection: AsyncConnection[Any], tenant_id: str, game_id: str
) -> tuple[str, Inclusion] | None:
    """The game's inclusion in the log's latest checkpoint, with that checkpoint's note; None while the
    log holds no checkpoint or not the game. Two round trips: the checkpoint and the leaf, then the nodes."""
    values = {"tenant_id": tenant_id, "game_id": game_id}
    async with connection.pipeline():
        checkpoint_rows = await connection.execute(_LATEST_CHECKPOINT, values)
        leaf_rows = await connection.execute(_LEAF_OF_GAME, values)
    checkpoint, leaf = await checkpoint_rows.fetchone(), await leaf_rows.fetchone()
    if checkpoint is None or leaf is None or int(leaf[0]) >= int(checkpoint[1]):
        return None
    note, size = str(checkpoint[0]), int(checkpoint[1])
    return note, await _proven(connection, tenant_id, game_id, int(leaf[0]), str(leaf[1]), size)


async def _proven(
    connection: AsyncConnection[Any], tenant_id: str, game_id: str, leaf_index: int, entry: str, size: int
) -> Inclusion:
    ranges = inclusion_ranges(leaf_index, size)
    hashes = await read_nodes(connection, tenant_id, nodes_for(ranges) | set(frontier(size)))
    return Inclusion(
        game_id,
        leaf_index,
        size,
        entry,
        leaf_hash(entry.encode()),
        root_hash(size, hashes),
        proof_hashes(ranges, hashes),
    )


async def consistency(
    connection: AsyncConnection[Any], tenant_id: str, first: int, second: int
) -> Consistency:
    if first > second:
        raise InvalidRequest(f"the first size ({first}) is after the second ({second})", field="query.first")
    ranges = consistency_ranges(first, second)
    async with connection.pipeline():
        size_rows = await connection.execute(_LOG_SIZE, {"tenant_id": tenant_id})
        node_rows = await _queue_nodes(connection, tenant_id, consistency_nodes(first, second, ranges))
    log_size = await size_rows.fetchone()
    _size_within(0 if log_size is None else int(log_size[0]), second)
    return consistency_of(first, second, ranges, _hashes(await node_rows.fetchall()))


def consistency_nodes(first: int, second: int, ranges: list[LeafRange]) -> set[Node]:
    """The stored nodes a consistency proof and the roots of both its trees are made of."""
    return nodes_for(ranges) | set(frontier(first)) | set(frontier(second))


def consistency_of(
    first: int, second: int, ranges: list[LeafRange], hashes: Mapping[Node, bytes]
) -> Consistency:
    return Consistency(
        first, second, root_hash(first, hashes), root_hash(second, hashes), proof_hashes(ranges, hashes)
    )


def _size_within(log_size: int, tree_size: int | None) -> int:
    """The size asked for, the log's by default. A tree the log has not grown to is not there (yet): a
    404 like a checkpoint never signed, not a malformed request. The size may be one the log will reach."""
    size = log_size if tree_size is None else tree_size
    if size > log_size:
        raise NotFound(f"the log holds {log_size} games; no tree of {size} is signed yet")
    return size


async def _queue_nodes(
    connection: AsyncConnection[Any], tenant_id: str, nodes: set[Node]
) -> AsyncCursor[Any]:
    wanted = sorted(nodes, key=lambda node: (node.level, node.index))
    values = {
        "tenant_id": tenant_id,
        "levels": [node.level for node in wanted],
        "indexes": [node.index for node in wanted],
    }
    return await connection.execute(_NODES, values)


async def read_nodes(connection: AsyncConnection[Any], tenant_id: str, nodes: set[Node]) -> dict[Node, bytes]:
    return _hashes(await (await _queue_nodes(connection, tenant_id, nodes)).fetchall())


def _hashes(rows: list[Any]) -> dict[Node, bytes]:
    return {Node(int(level), int(index)): bytes(value) for level, index, value in rows}
