"""`pokna-verify proof LINK` without `--log`: the inclusion the link carries, checked offline.

A finished game's link carries its place in the public log (`public_log`, beside the signed proof: the proof
was signed before the game was logged, so its signature does not cover this). Nothing in it is taken on the
link's word: the checkpoint is a signed note, checked with the keys that check the proof under the log's
origin; the leaf is rebuilt from the proof being verified and must be the entry the link shows; and the
audit path must lead from it to the checkpoint's root. `pending` (not logged yet) is said and fails nothing;
anything else the place holds that cannot be read fails, as on the verifier page (js/tlog.js), with keys or
without (then all but the checkpoint's signature is checked).
With `--state FILE` the checkpoint is judged against the one kept there, asking the log (at the link's
`log_url`) for the consistency proof between the two.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from pokna_verify.bundle.log_records import open_checkpoint
from pokna_verify.cli.input_files import UnusableInputError, is_url
from pokna_verify.cli.log_fetch import hashes_of
from pokna_verify.cli.log_inclusion import LogInclusion, another_proof, entry_for, proven_in, witnessed
from pokna_verify.cli.log_state import unsigned_checkpoint
from pokna_verify.crypto.errors import CryptoError
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.tlog.errors import LogError, SignatureError

_NO_KEYS = (
    "the public log place the link carries could not be checked: "
    "no keys to check the checkpoint's signature with"
)


def check_carried_inclusion(
    proof: Mapping[str, Any],
    place: Mapping[str, Any],
    keys: KeyRing | Ed25519PublicKey | None,
    state: Path | None,
    link_url: str,
) -> LogInclusion:
    try:
        return _check(proof, place, keys, state, link_url)
    except (UnusableInputError, CryptoError, LogError) as error:
        return LogInclusion(
            "unusable", f"the public log place the link carries could not be checked: {error}"
        )


def _check(
    proof: Mapping[str, Any],
    place: Mapping[str, Any],
    keys: KeyRing | Ed25519PublicKey | None,
    state: Path | None,
    link_url: str,
) -> LogInclusion:
    game_id = str(proof.get("game_id"))
    log_url = place.get("log_url")
    if place.get("status") == "pending":
        return LogInclusion(
            "not_logged",
            f"game {game_id} is not in its tenant's public log yet (the link says pending): games are logged "
            "about a second after they end; check again later",
        )
    ring = KeyRing.of(keys) if isinstance(keys, Ed25519PublicKey) else keys
    try:
        included, note = _proven(proof, place, ring)
    except (UnusableInputError, LogError) as error:
        # The place is the link's own, unsigned: a byte changed must fail, as on the verifier page, not
        # leave the proof's verdict standing beside an "unusable" log.
        return LogInclusion("failed", f"the public log place the link carries is malformed: {error}")
    if state is None or included.status != "included":
        return included
    if not isinstance(log_url, str):
        raise UnusableInputError("the link's public_log names no log_url to ask for consistency")
    try:
        base = urllib.parse.urljoin(link_url, log_url) if is_url(link_url) else log_url
    except ValueError as error:  # the link's own text, e.g. "http://[::1": not even an address
        raise UnusableInputError(f"the link's log_url {log_url[:80]!r} is no address ({error})") from None
    return witnessed(included, base.rstrip("/"), note, checkpoint_state=state)


def _proven(
    proof: Mapping[str, Any], place: Mapping[str, Any], ring: KeyRing | None
) -> tuple[LogInclusion, str]:
    """The verdict on the place the link carries, and its checkpoint's note. Without keys all but the
    signature is checked, as on the page: a place that is malformed, or not this proof's, fails all the same."""
    game_id = str(proof.get("game_id"))
    if place.get("status") != "logged":
        raise UnusableInputError(f"the link's public_log status is {str(place.get('status'))[:40]!r}")
    note, entry, leaf_index = place.get("checkpoint"), place.get("entry"), place.get("leaf_index")
    if not isinstance(note, str) or not isinstance(entry, str) or type(leaf_index) is not int:
        raise UnusableInputError("the link's public_log lacks its checkpoint, entry or leaf index")
    try:
        checkpoint = open_checkpoint(note, ring) if ring is not None else unsigned_checkpoint(note)
    except SignatureError as error:  # a checkpoint the link carries that no key signed: tampered with
        return LogInclusion("failed", f"the checkpoint the link carries is not signed: {error}"), note
    expected = entry_for(proof, entry)
    if entry.encode() != expected:
        return another_proof(checkpoint, game_id, entry, leaf_index), note
    included = proven_in(
        checkpoint, expected, leaf_index, hashes_of(place.get("inclusion_path"), "the link's inclusion_path")
    )
    if ring is None and included.status == "included":
        return LogInclusion("unusable", _NO_KEYS), note  # the page says "not run"
    return included, note
