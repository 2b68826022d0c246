"""Every query on the public log's tables. The sequencer and the read API decide; this only reads and
writes rows, each statement naming its tenant (on Citus: one shard)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Table, insert, select, text, tuple_, update
from sqlalchemy.orm import Session

from pokna.db.models.game_log import GameLog, GameLogCheckpoint, GameLogLeaf, GameLogNode
from pokna_verify.tlog.tree import Node

_log = cast(Table, GameLog.__table__)
_leaf = cast(Table, GameLogLeaf.__table__)
_node = cast(Table, GameLogNode.__table__)
_checkpoint = cast(Table, GameLogCheckpoint.__table__)


# A tenant's log row is made by the first pass that looks at it, by whichever process gets there first.
_OPEN_LOG = text(
    "INSERT INTO game_log (tenant_id, size, updated_at) VALUES (:tenant_id, 0, :now) ON CONFLICT DO NOTHING"
)


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


def lock_log(session: Session, tenant_id: str, now: datetime) -> int | None:
    """The log's size under its row lock, held until COMMIT; None if another process holds it (that one
    appends this tenant's games now: this one has nothing to wait for)."""
    session.execute(_OPEN_LOG, {"tenant_id": tenant_id, "now": now})
    size = session.scalar(
        select(_log.c.size).where(_log.c.tenant_id == tenant_id).with_for_update(skip_locked=True)
    )
    return None if size is None else int(size)


def set_size(session: Session, tenant_id: str, size: int, now: datetime) -> None:
    session.execute(update(_log).where(_log.c.tenant_id == tenant_id).values(size=size, updated_at=now))


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


def insert_nodes(session: Session, tenant_id: str, hashes: Mapping[Node, bytes]) -> None:
    session.execute(
        insert(_node),
        [
            {"tenant_id": tenant_id, "level": node.level, "node_index": node.index, "hash": value}
            for node, value in hashes.items()
        ],
    )


def insert_leaves(session: Session, tenant_id: str, leaves: Iterable[StoredLeaf], now: datetime) -> None:
    session.execute(
        insert(_leaf),
        [
            {
                "tenant_id": tenant_id,
                "leaf_index": leaf.leaf_index,
                "game_id": leaf.game_id,
                "entry": leaf.entry,
                "appended_at": now,
            }
            for leaf in leaves
        ],
    )


def insert_checkpoint(session: Session, tenant_id: str, checkpoint: StoredCheckpoint) -> None:
    session.execute(
        insert(_checkpoint).values(
            tenant_id=tenant_id,
            tree_size=checkpoint.tree_size,
            root_hash=checkpoint.root_hash,
            note=checkpoint.note,
            created_at=checkpoint.created_at,
        )
    )


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
