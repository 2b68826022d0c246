"""The commitment receipt: signed proof that the server seed hash existed before any client seed or roll.

Handed out when the game is created. A player who keeps it can later show that the revealed seed is the one
committed to, whatever the operator's database says by then.
"""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pokna_verify.crypto.signing import sign_document
from pokna_verify.fairness.beacon import BEACON_PROTOCOL, BeaconChain, FairnessMode
from pokna_verify.fairness.protocol import PROTOCOL, is_sha256_hex
from pokna_verify.fairness.terms import GameTerms

RECEIPT_DOCUMENT = "commitment_receipt"


def build_commitment_receipt(
    *,
    game_id: str,
    server_seed_hash: str,
    created_at: str,
    terms: GameTerms,
    private_key: Ed25519PrivateKey,
    beacon_chain: BeaconChain | None = None,
) -> dict[str, Any]:
    """`created_at` is passed in (RFC 3339 UTC) because this package reads no clock. With `beacon_chain`
    the game is played in beacon mode, and the receipt commits to that mode and chain before play."""
    if not is_sha256_hex(server_seed_hash):
        raise ValueError("server_seed_hash is 64 lowercase hexadecimal characters")
    document: dict[str, Any] = {
        "protocol": PROTOCOL if beacon_chain is None else BEACON_PROTOCOL,
        "document": RECEIPT_DOCUMENT,
        "game_id": game_id,
        "server_seed_hash": server_seed_hash,
        "created_at": created_at,
        "game": terms.to_json(),
    }
    if beacon_chain is not None:
        document["fairness_mode"] = str(FairnessMode.BEACON)
        document["beacon_chain"] = beacon_chain.to_json()
    return sign_document(document, private_key)
