"""A finished game's place in its tenant's public log, for the game's public fairness link.

The dealer serves the link and cannot import the log (the log reads the dealer's games), so the link's
route passes `place_in_log` to the dealer's `fairness_link`. The inclusion is proven against the latest
checkpoint, whose signed note is in the answer: a player's tool checks it offline, with the keys that
check the proof, and asks the log nothing.
"""

from __future__ import annotations

import base64
from typing import Any

from psycopg import AsyncConnection

from pokna.dealer.link_log import LinkLogIncludedOut, LinkLogPendingOut
from pokna.public_log import reads


async def place_in_log(
    connection: AsyncConnection[Any], tenant_id: str, game_id: str, leaf_index: int | None
) -> LinkLogPendingOut | LinkLogIncludedOut:
    """Pending until the sequencer has marked the game logged, which it does in the transaction that
    appends its leaf and signs the checkpoint holding it: a marked game always has both."""
    log_url = f"/v1/logs/{tenant_id}"
    found = None if leaf_index is None else await reads.latest_inclusion(connection, tenant_id, game_id)
    if found is None:
        return LinkLogPendingOut(status="pending", log_url=log_url)
    note, proof = found
    return LinkLogIncludedOut(
        status="logged",
        log_url=log_url,
        origin=note.split("\n", 1)[0],
        leaf_index=proof.leaf_index,
        game_number=proof.leaf_index + 1,
        tree_size=proof.tree_size,
        entry=proof.entry,
        inclusion_path=[base64.b64encode(value).decode("ascii") for value in proof.path],
        checkpoint=note,
    )
