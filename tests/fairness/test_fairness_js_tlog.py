"""The core's public-log checks (verifier/pokna_verify/js/tlog.js) under Node, on vectors the Python
implementation (pokna_verify.tlog) makes here: every inclusion path of trees of 1 to 13 leaves, and changed
copies of each that must fail; a signed checkpoint and one signed by a stranger; and a finished game's link
with its `public_log` (logged, pending, tampered), judged by `verifyDocument` as `pokna-verify proof` does."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from fairness_samples import KEY_RING, NEW_KEY, STRANGER_KEY, sample_proof, sample_receipt
from test_fairness_js_core import project, run_node_tests

from pokna_verify.tlog.checkpoint import Checkpoint
from pokna_verify.tlog.game_leaf import game_leaf_entry
from pokna_verify.tlog.hashing import leaf_hash, node_hash
from pokna_verify.tlog.note import sign_note
from pokna_verify.tlog.tree import inclusion_ranges, proof_hashes, root_hash
from support.log_stand_in import TENANT as TENANT
from support.log_stand_in import History, b64

__all__ = ["project"]  # the Node project fixture, shared with the core's other Node tests
ORIGIN = "vectors.test/games/tnt_vectors"
POT = "acct_pot_0001"


def trees() -> list[dict[str, Any]]:
    made = []
    for size in range(1, 14):
        history = History([f"entry {size}.{i}".encode() for i in range(size)], size)
        made.append(
            {
                "entries": [entry.decode() for entry in history.entries],
                "root": b64(root_hash(size, history.nodes)),
                "paths": [
                    [b64(value) for value in proof_hashes(inclusion_ranges(index, size), history.nodes)]
                    for index in range(size)
                ],
            }
        )
    return made


def link_place(proof: dict[str, Any], key: Any = NEW_KEY) -> dict[str, Any]:
    entry = game_leaf_entry(proof, status="settled", pot_account_id=POT)
    history = History([b"game a", b"game b", b"game c", entry, b"game e", b"game f"], 6)
    note = sign_note(Checkpoint(ORIGIN, 6, root_hash(6, history.nodes)).to_text(), ORIGIN, key)
    return {
        "status": "logged",
        "log_url": "/v1/logs/tnt_vectors",
        "origin": ORIGIN,
        "leaf_index": 3,
        "game_number": 4,
        "tree_size": 6,
        "entry": entry.decode(),
        "inclusion_path": [b64(value) for value in proof_hashes(inclusion_ranges(3, 6), history.nodes)],
        "checkpoint": note,
    }


def huge_checkpoint() -> dict[str, Any]:
    """A checkpoint of 2**53 + 1 games and a 53-hash path from leaf 0 to its root: RFC 9162's steps (and
    pokna_verify.tlog) refuse it, a tree of that size being 54 deep. JavaScript's Number read the size as
    2**53, whose path it is, and the page proved the game in a checkpoint of a size it was not signed at."""
    entry = b"entry 0"
    path = [bytes([i]) * 32 for i in range(53)]
    root = leaf_hash(entry)
    for value in path:
        root = node_hash(root, value)
    text = Checkpoint(ORIGIN, 2**53 + 1, root).to_text()
    return {"checkpoint": text, "entry": entry.decode(), "path": [b64(value) for value in path]}


def vectors() -> dict[str, Any]:
    proof = sample_proof()
    link = {
        "object": "fairness_link",
        "game_id": proof["game_id"],
        "status": "settled",
        "revealed": True,
        "commitment": sample_receipt(),
        "client_seeds": [],
        "proof": proof,
        "keys_url": "/v1/fairness/keys",
        "public_log": link_place(proof),
    }
    other = copy.deepcopy(proof)
    other["signature"] = sample_proof(STRANGER_KEY)["signature"]
    return {
        "trees": trees(),
        "key_ring": KEY_RING.to_json(),
        "origin": ORIGIN,
        "link": link,
        "stranger_place": link_place(proof, STRANGER_KEY),
        "other_proof_place": link_place(other),
        "huge": huge_checkpoint(),
    }


def test_the_public_log_checks_under_node_agree_with_python(project: Path, tmp_path: Path) -> None:
    path = tmp_path / "tlog_vectors.json"
    path.write_text(json.dumps(vectors()))
    summary = run_node_tests(project, "tlog.test.mjs", {"POKNA_TLOG_VECTORS": str(path)})
    assert summary["pass"] == 7
