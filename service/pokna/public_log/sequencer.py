"""The sequencer: appends a tenant's finished games to its public log in batches and signs a checkpoint.

Off the request path: a game's last action only sets its status and proof, as before; this worker (each
second, `pokna log sequence`, and once per `pokna sweep`) finds the games finished and not yet logged
(pokna.dealer.log_feed), oldest first, and in one transaction per tenant appends them, marks them and signs
the new size. Several processes may run it: each takes the tenant's log row `FOR UPDATE SKIP LOCKED`, so one
appends while the others skip that tenant, and a leaf index is never given twice.

The longest a game waits for its leaf (CT's "maximum merge delay"): a game that finished before a pass
began is logged by that pass when its tenant has at most `batch` games waiting, so with a pass every
`interval` seconds it waits at most `interval` plus one pass. A larger backlog drains oldest first, `batch`
games a pass: the game then waits ceil(waiting / batch) passes. tests/public_log/test_public_log_sequencer.py
holds both.

A checkpoint's ledger heads say "every game whose money ends at or before these heads is in this tree"
(what an auditor checks a bundle against: pokna_verify.bundle.public_log). So they are read before the
games are, and a pass that may leave games waiting (a full batch) signs the heads of the last pass that
left none instead: never ahead of the games, and never going back, so witnesses see the books only grow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from psycopg import AsyncConnection

from pokna.dealer.log_feed import any_game_awaiting_log, games_awaiting_log, mark_logged
from pokna.ledger import read_heads_async
from pokna.public_log import store
from pokna.public_log.reads import read_nodes
from pokna_verify.tlog.checkpoint import Checkpoint, ledger_head_lines, parse_checkpoint
from pokna_verify.tlog.game_leaf import game_leaf_entry
from pokna_verify.tlog.note import sign_note
from pokna_verify.tlog.tree import appended_nodes, frontier, root_hash

BATCH = 1000
"""Games one pass appends to one tenant's log: about two node rows and one leaf a game, one transaction."""


@dataclass(frozen=True)
class LogSigner:
    """Who signs the logs: the service's Ed25519 key, under each tenant log's origin as its key name."""

    origin_prefix: str
    signing_key: Ed25519PrivateKey

    def origin(self, tenant_id: str) -> str:
        return f"{self.origin_prefix}/{tenant_id}"


async def append_finished_games(
    connection: AsyncConnection[Any], tenant_id: str, signer: LogSigner, now: datetime, batch: int = BATCH
) -> int | None:
    """How many games this pass appended to the tenant's log; None if another process holds the log. The
    probe on its own, then one transaction: the lock, the reads, the writes."""
    if not await any_game_awaiting_log(connection, tenant_id):
        return 0
    async with connection.transaction():
        return await _append(connection, tenant_id, signer, now, batch)


async def _append(
    connection: AsyncConnection[Any], tenant_id: str, signer: LogSigner, now: datetime, batch: int
) -> int | None:
    size = await store.lock_log(connection, tenant_id, now)
    if size is None:
        return None
    # The heads before the games: every game whose last transfer they include had ended (in the same
    # commit) before they were read, so the next statement sees it awaiting its leaf.
    heads = await read_heads_async(connection, tenant_id)
    games = await games_awaiting_log(connection, tenant_id, batch)
    if not games:
        return 0
    entries = [
        game_leaf_entry(game.proof, status=game.status, pot_account_id=game.pot_account_id) for game in games
    ]
    stored = await read_nodes(connection, tenant_id, set(frontier(size)))
    made = appended_nodes(size, entries, stored)
    new_size = size + len(entries)
    leaves = [
        store.StoredLeaf(size + offset, game.game_id, entry.decode())
        for offset, (game, entry) in enumerate(zip(games, entries, strict=True))
    ]
    await mark_logged(connection, tenant_id, {leaf.game_id: leaf.leaf_index for leaf in leaves})
    root = root_hash(new_size, {**stored, **made})
    if len(games) >= batch:  # a backlog may remain: sign the heads of the last pass that left none
        kept = await store.checkpoint_at(connection, tenant_id)
        heads = {} if kept is None else parse_checkpoint(kept.note.split("\n\n", 1)[0] + "\n").ledger_heads
    checkpoint = Checkpoint(signer.origin(tenant_id), new_size, root, ledger_head_lines(heads))
    note = sign_note(checkpoint.to_text(), checkpoint.origin, signer.signing_key)
    await store.append(connection, tenant_id, made, leaves, store.StoredCheckpoint(new_size, root, note, now))
    return len(entries)
