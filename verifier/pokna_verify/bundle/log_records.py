"""The public log's records in an audit bundle (docs/audit.md, the format): the signed checkpoint, its
leaves, and the leaf a game's record makes; pokna_verify.bundle.public_log checks them, the service's
pokna.bundles writes them."""

from __future__ import annotations

from typing import Any

from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.tlog.checkpoint import Checkpoint, parse_checkpoint
from pokna_verify.tlog.game_leaf import FINISHED, game_leaf_entry
from pokna_verify.tlog.hashing import leaf_hash
from pokna_verify.tlog.note import NoteVerifier, open_note

LOG_CHECKPOINT = "pokna.log.checkpoint"
LOG_LEAF = "pokna.log.leaf"
LOG_FORMAT = 1
NO_LOG = "no public log record: completeness not checked"


def log_checkpoint_record(note: str, previous: dict[str, Any] | None) -> dict[str, Any]:
    """`previous`: {"checkpoint": the earlier signed note, "consistency": base64 hashes from it to `note`}."""
    return {"type": LOG_CHECKPOINT, "format": LOG_FORMAT, "checkpoint": note, "previous": previous}


def log_leaf_record(index: int, entry: str, proof: dict[str, Any] | None = None) -> dict[str, Any]:
    """`proof`: only for a game the books hold no record of, since it moved no money (cancelled before
    its antes): the auditor checks that proof and rebuilds the leaf from it."""
    record: dict[str, Any] = {"type": LOG_LEAF, "index": index, "entry": entry}
    if proof is not None:
        record["proof"] = proof
    return record


def game_log_leaf(record: dict[str, Any]) -> bytes | None:
    """The leaf hash a finished game's record makes (its proof, status and pot), None for another game;
    read where the proof is read, since the proof itself is not kept (pokna_verify.bundle.lines)."""
    status, pot, proof = record.get("status"), record.get("pot_account_id"), record.get("proof")
    if status not in FINISHED or not isinstance(pot, str) or not isinstance(proof, dict):
        return None
    try:
        return leaf_hash(game_leaf_entry(proof, status=str(status), pot_account_id=pot))
    except (KeyError, ValueError, TypeError):
        return None


def open_checkpoint(note: str, ring: KeyRing) -> Checkpoint:
    """The checkpoint a signed note holds, its signature checked under the note's origin with every key of
    the ring (LogError when no key signed it or it is not a checkpoint)."""
    origin = note.split("\n", 1)[0]
    verifiers = [NoteVerifier(origin, key.public_key) for key in ring.keys]
    return parse_checkpoint(open_note(note, verifiers).text)
