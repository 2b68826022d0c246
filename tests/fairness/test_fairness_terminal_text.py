"""What the offline verifiers print of a file they check reaches a terminal as text, never as its control
sequences: the file is the one thing under suspicion. A forged proof whose `game_id` holds a newline, a
fake "VALID" and ESC [8m (conceal) would otherwise show a clean report and hide the real verdict below it;
an export's tenant or currency holding ESC [2J would clear the screen. Each control character is printed
as its Python escape (`\\x1b`, `\\n`), in both command lines (the `verify_cli` fixture)."""

from __future__ import annotations

import json
from pathlib import Path

from fairness_samples import KEY_RING, sample_proof

from support.verify_cli import VerifyCli

FORGED_ID = "gam_1\n  PASS     signature           fine\nVALID\x1b[8m"


def test_a_forged_proof_cannot_drive_the_terminal_or_print_a_verdict_line(
    verify_cli: VerifyCli, tmp_path: Path
) -> None:
    proof = tmp_path / "proof.json"
    proof.write_text(json.dumps({**sample_proof(), "game_id": FORGED_ID}))
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps(KEY_RING.to_json()))
    ran = verify_cli("verify", str(proof), "--keys", str(keys))
    assert ran.exit_code == 1, ran.output
    assert "\x1b" not in ran.output
    lines = ran.stdout.splitlines()
    assert lines[0] == "Proof of game gam_1\\n  PASS     signature           fine\\nVALID\\x1b[8m"
    assert "VALID" not in lines[1:-1]
    assert lines[-1] == "INVALID: failed checks: signature"


def test_an_exports_fields_cannot_drive_the_terminal(verify_cli: VerifyCli, tmp_path: Path) -> None:
    line = {
        "chain": 0,
        "seq": 1,
        "id": "txn_\x1b]0;title\x07",
        "tenant_id": "ten_\x1b[2J",
        "kind": "deposit",
        "reference": None,
        "metadata": {},
        "created_at": "2026-01-01T00:00:00.000000Z",
        "postings": [{"account_id": "acct_1", "amount": 5, "currency": "CR\x1b[8m\u202e"}],
        "prev_hash": "0" * 64,
        "hash": "0" * 64,
    }
    export = tmp_path / "ledger.jsonl"
    export.write_text(json.dumps(line) + "\n")
    ran = verify_cli("audit", "verify", str(export))
    assert ran.exit_code == 1, ran.output
    assert "\x1b" not in ran.output
    assert "\u202e" not in ran.output
    assert f"Ledger export {export}: tenant ten_\\x1b[2J," in ran.stdout
    assert "  trial balance  5 CR\\x1b[8m\\u202e" in ran.stdout.splitlines()
