"""What an audit bundle carries of the tenant's public log: its latest signed checkpoint, every leaf up to
it, and, when the auditor names the size of the checkpoint their previous bundle carried, the proof that
this one extends it (pokna_verify.bundle.public_log checks them; docs/audit.md, "The public log").

The latest checkpoint, read before the journal's range is resolved: its ledger heads are then at or before
the heads the bundle ends on, so every game it logs has its money inside a bundle of the whole books, and
it is the checkpoint witnesses most likely keep. Only a bundle of the whole books (every chain, from the
start, to now) carries it: a range that starts later or ends earlier leaves logged games out by design,
and completeness cannot be asked of it.
"""

from __future__ import annotations

import base64
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection

from pokna.dealer import service as dealer
from pokna.errors import InvalidRequest, NotFound
from pokna.public_log import reads, store
from pokna_verify.bundle.log_records import log_checkpoint_record, log_leaf_record
from pokna_verify.tlog.tree import consistency_ranges

LEAF_BATCH = 2000
"""Leaves read per query and sent per chunk, as the journal's batches are."""


@dataclass(frozen=True)
class LogPart:
    size: int
    record: dict[str, Any]


async def log_part(
    connection: AsyncConnection[Any], tenant_id: str, *, whole_books: bool, since: int | None
) -> LogPart | None:
    """The log's checkpoint record for the bundle, or None when the bundle carries none (not the whole
    books, or nothing logged yet). `since`: the previous bundle's checkpoint size (`log_since`): refused
    naming the field for a bundle that carries no log, not found when the log signed no such size."""
    field = "query.log_since"
    if not whole_books:
        if since is not None:
            raise InvalidRequest(
                "only a bundle of the whole books (no chain, seq or time range) carries the public log",
                field=field,
            )
        return None
    latest = await store.checkpoint_at(connection, tenant_id)
    if latest is None:
        if since is not None:
            raise NotFound(f"tenant {tenant_id}'s public log holds no game yet")
        return None
    previous = None
    if since is not None:
        # A size the log has not reached is not found, as a checkpoint never signed is (public_log.reads).
        earlier = (
            await store.checkpoint_at(connection, tenant_id, since) if since <= latest.tree_size else None
        )
        if earlier is None:
            raise NotFound(f"tenant {tenant_id}'s public log signed no checkpoint of {since} games")
        ranges = consistency_ranges(since, latest.tree_size)
        nodes = reads.consistency_nodes(since, latest.tree_size, ranges)
        proof = reads.consistency_of(
            since, latest.tree_size, ranges, await reads.read_nodes(connection, tenant_id, nodes)
        )
        previous = {
            "checkpoint": earlier.note,
            "consistency": [base64.b64encode(value).decode() for value in proof.path],
        }
    return LogPart(latest.tree_size, log_checkpoint_record(latest.note, previous))


def leaf_starts(size: int) -> range:
    return range(0, size, LEAF_BATCH)


async def leaf_batch(
    connection: AsyncConnection[Any], tenant_id: str, start: int, size: int, in_books: Collection[str]
) -> list[dict[str, Any]]:
    """The log's leaves [start, start + LEAF_BATCH) cut at `size`, as records. `in_books`: the games the
    bundle wrote a record for; a logged game not among them moved no money (a game cancelled before its
    antes), so its leaf carries its proof for the auditor to rebuild it from."""
    leaves = await store.leaves_between(connection, tenant_id, start, min(start + LEAF_BATCH, size))
    moneyless = await dealer.games_for_audit(
        connection, tenant_id, [leaf.game_id for leaf in leaves if leaf.game_id not in in_books]
    )
    return [
        log_leaf_record(
            leaf.leaf_index,
            leaf.entry,
            moneyless[leaf.game_id].proof if leaf.game_id in moneyless else None,
        )
        for leaf in leaves
    ]
