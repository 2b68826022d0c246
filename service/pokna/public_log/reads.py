"""What the public read API answers: checkpoints as signed, and proofs made from the stored subtrees.

A proof is asked for at a tree size, so a witness or player holding the checkpoint of that size can check
it against the root they already trust; any size up to the log's is answered (the root at that size is in
the answer too, for whoever holds no checkpoint of it). Bad sizes are refused naming the parameter.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from pokna.errors import InvalidRequest, NotFound
from pokna.public_log import store
from pokna_verify.tlog.hashing import leaf_hash
from pokna_verify.tlog.tree import (
    consistency_ranges,
    frontier,
    inclusion_ranges,
    nodes_for,
    proof_hashes,
    root_hash,
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


def latest_checkpoint(session: Session, tenant_id: str) -> str:
    checkpoint = store.checkpoint_at(session, tenant_id)
    if checkpoint is None:
        raise NotFound(f"tenant {tenant_id} has no game in its public log yet")
    return checkpoint.note


def checkpoint_of_size(session: Session, tenant_id: str, tree_size: int) -> str:
    checkpoint = store.checkpoint_at(session, tenant_id, tree_size)
    if checkpoint is None:
        raise NotFound(f"tenant {tenant_id}'s public log signed no checkpoint of {tree_size} games")
    return checkpoint.note


def _size_within(log_size: int, tree_size: int) -> None:
    """A tree the log has not grown to is not there (yet): a 404 like a checkpoint never signed, not a
    malformed request. The size may be one the log will reach."""
    if tree_size > log_size:
        raise NotFound(f"the log holds {log_size} games; no tree of {tree_size} is signed yet")


def inclusion(session: Session, tenant_id: str, game_id: str, tree_size: int | None) -> Inclusion:
    leaf = store.leaf_of_game(session, tenant_id, game_id)
    if leaf is None:
        raise NotFound(
            f"game {game_id} is not in tenant {tenant_id}'s public log (not finished or not logged yet)"
        )
    log_size = store.log_size(session, tenant_id)
    size = log_size if tree_size is None else tree_size
    _size_within(log_size, size)
    if leaf.leaf_index >= size:
        raise NotFound(f"game {game_id} is leaf {leaf.leaf_index}, logged after the tree of {size} games")
    ranges = inclusion_ranges(leaf.leaf_index, size)
    hashes = store.read_nodes(session, tenant_id, nodes_for(ranges) | set(frontier(size)))
    return Inclusion(
        game_id,
        leaf.leaf_index,
        size,
        leaf.entry,
        leaf_hash(leaf.entry.encode()),
        root_hash(size, hashes),
        proof_hashes(ranges, hashes),
    )


def consistency(session: Session, tenant_id: str, first: int, second: int) -> Consistency:
    if first > second:
        raise InvalidRequest(f"the first size ({first}) is after the second ({second})", field="query.first")
    _size_within(store.log_size(session, tenant_id), second)
    ranges = consistency_ranges(first, second)
    hashes = store.read_nodes(
        session, tenant_id, nodes_for(ranges) | set(frontier(first)) | set(frontier(second))
    )
    return Consistency(
        first, second, root_hash(first, hashes), root_hash(second, hashes), proof_hashes(ranges, hashes)
    )
