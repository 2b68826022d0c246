"""What one leaf of a tenant's public log says: one finished game, as RFC 8785 canonical JSON.

    {"game_id", "leaf": "pokna.game/1", "pot_account_id", "proof_sha256", "status"}

- `proof_sha256`, the SHA-256 of the game's whole signed proof in canonical form (signature included): the
  leaf pins every seed, roll, decision, transfer and the signature, so a proof shown later that differs
  in any byte is not the logged one;
- `game_id` and `pot_account_id`: where the game's money is in the books. Every transfer of a game passes
  through its pot account, so an auditor finds the game's journal transactions by it and the game's leaf
  by its id: a game in the books but not in the log, or logged but missing from the books, is a finding;
- `status`: settled or cancelled, both finished, both logged (a cancelled game returned the stakes: its
  leaf shows it was not quietly dropped).

Canonical bytes, so anyone who holds the proof rebuilds the entry byte for byte and needs only the hash path.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from pokna_verify.crypto.canonical_json import canonicalize

LEAF_KIND = "pokna.game/1"
FINISHED = ("settled", "cancelled")


def proof_sha256(proof: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonicalize(proof)).hexdigest()


def game_leaf_entry(proof: Mapping[str, Any], *, status: str, pot_account_id: str) -> bytes:
    if status not in FINISHED:
        raise ValueError(f"only a finished game is logged, not a {status!r} one")
    return canonicalize(
        {
            "leaf": LEAF_KIND,
            "game_id": proof["game_id"],
            "status": status,
            "pot_account_id": pot_account_id,
            "proof_sha256": proof_sha256(proof),
        }
    )
