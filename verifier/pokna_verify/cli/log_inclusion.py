"""`pokna-verify proof --log URL`: is this game in its tenant's public log, in a checkpoint the log signed?

The game's leaf is rebuilt from the proof being verified (pokna_verify.tlog.game_leaf: its id and the hash of
the whole signed proof), so a proof that differs by one byte from the logged one is not found in the log;
its path is checked against the root of the latest checkpoint, whose signature is checked first. A game not
logged yet is said plainly and fails nothing: logging follows a game's end by about a second. With
`--state FILE` that checkpoint is also judged against the one kept there, as `log watch` does.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from pokna_verify.bounded_input import InputLimitError, loads
from pokna_verify.bundle.log_records import open_checkpoint
from pokna_verify.cli.input_files import NotThere, UnusableInputError
from pokna_verify.cli.log_fetch import fetch_json, fetch_text, hashes_of, judged, keys_url_of, log_base
from pokna_verify.cli.log_state import (
    WitnessState,
    kept_checkpoint,
    origin_problem,
    read_state,
    unsigned_checkpoint,
    write_state,
)
from pokna_verify.cli.proof_inputs import read_key_ring
from pokna_verify.crypto.errors import CryptoError
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.tlog.checkpoint import Checkpoint
from pokna_verify.tlog.errors import LogError
from pokna_verify.tlog.game_leaf import LEAF_KIND, game_leaf_entry
from pokna_verify.tlog.hashing import leaf_hash
from pokna_verify.tlog.verify import verify_inclusion

Status = Literal["included", "not_logged", "failed", "unusable"]


@dataclass(frozen=True)
class LogInclusion:
    status: Status
    detail: str
    origin: str | None = None
    leaf_index: int | None = None
    tree_size: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "detail": self.detail,
            "origin": self.origin,
            "game_number": None if self.leaf_index is None else self.leaf_index + 1,
            "tree_size": self.tree_size,
        }


def check_log_inclusion(
    proof: Mapping[str, Any], log_url: str, keys: KeyRing | Ed25519PublicKey | None, state: Path | None
) -> LogInclusion:
    try:
        return _check(proof, log_url, keys, state)
    except (UnusableInputError, CryptoError, LogError) as error:
        return LogInclusion("unusable", f"the public log could not be checked: {error}")


def _check(
    proof: Mapping[str, Any], log_url: str, keys: KeyRing | Ed25519PublicKey | None, state: Path | None
) -> LogInclusion:
    base = log_base(log_url)
    if isinstance(keys, Ed25519PublicKey):
        ring = KeyRing.of(keys)
    else:
        ring = keys if keys is not None else read_key_ring(keys_url_of(base))
    note = fetch_text(f"{base}/checkpoint", "checkpoint")
    checkpoint = open_checkpoint(note, ring)
    another_log = origin_problem(WitnessState(), base, checkpoint.origin)
    if another_log is not None:
        return LogInclusion("failed", another_log, checkpoint.origin, tree_size=checkpoint.size)
    game_id = str(proof.get("game_id"))
    # One path segment, whatever the proof's id holds: a '#', '?' or '/..' would make it another address.
    asked = f"{base}/games/{urllib.parse.quote(game_id, safe='')}/inclusion?tree_size={checkpoint.size}"
    try:
        answer = fetch_json(asked, "inclusion proof")
    except NotThere:
        return LogInclusion(
            "not_logged",
            f"game {game_id} is not in {checkpoint.origin}'s public log yet (its latest checkpoint holds "
            f"{checkpoint.size} games): games are logged about a second after they end; check again later",
            checkpoint.origin,
            tree_size=checkpoint.size,
        )
    entry, leaf_index = answer.get("entry"), answer.get("leaf_index")
    if not isinstance(entry, str) or type(leaf_index) is not int:
        raise UnusableInputError(f"{asked} did not answer an entry and a leaf index")
    expected = entry_for(proof, entry)
    if entry.encode() != expected:
        return another_proof(checkpoint, game_id, entry, leaf_index)
    path = hashes_of(answer.get("inclusion_path"), f"{asked}: inclusion_path")
    included = proven_in(checkpoint, expected, leaf_index, path)
    if state is None or included.status != "included":
        return included
    return witnessed(included, base, note, checkpoint_state=state)


def another_proof(checkpoint: Checkpoint, game_id: str, entry: str, leaf_index: int) -> LogInclusion:
    """The log's leaf for this game is made of a proof other than the one being verified."""
    detail = f"{checkpoint.origin} logged another proof for game {game_id} than this one: {entry[:200]}"
    return LogInclusion("failed", detail, checkpoint.origin, leaf_index, checkpoint.size)


def proven_in(checkpoint: Checkpoint, entry: bytes, leaf_index: int, path: list[bytes]) -> LogInclusion:
    """The verdict on one audit path: `entry` (rebuilt from the proof) is leaf `leaf_index` of the signed
    `checkpoint`'s tree, or the path fails."""
    try:
        verify_inclusion(leaf_hash(entry), leaf_index, checkpoint.size, path, checkpoint.root_hash)
    except LogError as error:
        return LogInclusion(
            "failed",
            f"the log's inclusion proof fails: {error}",
            checkpoint.origin,
            leaf_index,
            checkpoint.size,
        )
    return LogInclusion(
        "included",
        f"game #{leaf_index + 1} of {checkpoint.origin}'s public log, proven in its signed checkpoint of "
        f"{checkpoint.size} games",
        checkpoint.origin,
        leaf_index,
        checkpoint.size,
    )


def entry_for(proof: Mapping[str, Any], served: str) -> bytes:
    """The leaf this proof makes, with the status and pot account the log says (the proof does not carry
    them); the proof's own id and hash are what must match."""
    try:
        claimed = loads(served)
    except InputLimitError as error:  # JSON inside a document's or an answer's JSON: read within the limits
        raise UnusableInputError(f"the log's entry: {error}") from None
    except ValueError:
        claimed = None
    if not isinstance(claimed, dict) or claimed.get("leaf") != LEAF_KIND:
        raise UnusableInputError(f"the log's entry is not a {LEAF_KIND} leaf: {served[:200]}")
    status, pot = claimed.get("status"), claimed.get("pot_account_id")
    if not isinstance(status, str) or not isinstance(pot, str):
        raise UnusableInputError(f"the log's entry names no status and pot account: {served[:200]}")
    try:
        return game_leaf_entry(proof, status=status, pot_account_id=pot)
    except (ValueError, KeyError) as error:
        raise UnusableInputError(f"no leaf can be made of this proof: {error}") from error


def witnessed(included: LogInclusion, base: str, note: str, *, checkpoint_state: Path) -> LogInclusion:
    """The checkpoint the game was proven in, judged against the one kept in the state file and kept."""
    kept_state = read_state(checkpoint_state)
    latest = unsigned_checkpoint(note)
    renamed = origin_problem(kept_state, base, latest.origin)
    if renamed is not None:
        return LogInclusion("failed", renamed, included.origin, included.leaf_index, included.tree_size)
    kept = kept_checkpoint(kept_state, latest.origin, checkpoint_state)
    witnessed = judged(base, kept, latest)
    if not witnessed.judgement.consistent:
        return LogInclusion(
            "failed", witnessed.detail, included.origin, included.leaf_index, included.tree_size
        )
    if kept is None or latest.size > kept.size:
        kept_state.keep(latest.origin, note, base)
        write_state(checkpoint_state, kept_state)
    elif kept_state.pin_address(latest.origin, base):  # a state file of the previous version
        write_state(checkpoint_state, kept_state)
    return included
