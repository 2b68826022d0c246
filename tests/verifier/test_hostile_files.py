"""Hostile files a fuzzing round found crashing the verifiers (the hostile-files task after issue 46): each was
a traceback instead of an answer. Every case here runs through both command lines (the `verify_cli`
fixture) on a file made as the service makes it, changed as an attacker would, and must end in a documented
exit code with the verifier's own words. No database: the proofs are tests/fairness/fairness_samples.py's, the
exports are written line by line as `pokna ledger export` writes them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pokna_verify.ledger.chain import document_hash, format_timestamp, transaction_document
from support.verify_cli import Ran, VerifyCli

EXPORT_KEYS = ("seq", "id", "tenant_id", "kind", "reference", "metadata", "created_at", "postings")


def _export_lines(transactions: int) -> list[dict[str, object]]:
    """Transfers between two wallets on chain 0, each line as `pokna ledger export` writes it."""
    wallets = [f"acct_{index:032x}" for index in range(2)]
    prev_hash, lines = "0" * 64, []
    for seq in range(1, transactions + 1):
        document = transaction_document(
            seq=seq,
            prev_hash=prev_hash,
            tenant_id="ten_hostile",
            transaction_id=f"txn_{seq:032x}",
            kind="ante",
            reference=None,
            metadata={},
            created_at=format_timestamp(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seq)),
            postings=[(wallets[seq % 2], -seq, "CREDIT"), (wallets[(seq + 1) % 2], seq, "CREDIT")],
        )
        prev_hash = document_hash(document)
        lines.append(
            {
                **{key: document[key] for key in EXPORT_KEYS},
                "prev_hash": document["prev_hash"],
                "hash": prev_hash,
            }
        )
    return lines


def _written(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _said(ran: Ran) -> str:
    assert "Traceback" not in ran.output, ran.output[-3000:]
    return ran.output


def test_an_export_line_without_its_reference_is_a_malformed_line_not_a_crash(
    verify_cli: VerifyCli, tmp_path: Path
) -> None:
    """`reference` may be null, so a line that leaves it out passed the shape check (which read it with
    .get) and the hash, which reads every hashed field, raised KeyError."""
    lines = _export_lines(3)
    assert verify_cli("audit", "verify", str(_written(tmp_path / "ledger.jsonl", lines))).exit_code == 0
    del lines[1]["reference"]
    ran = verify_cli("audit", "verify", str(_written(tmp_path / "ledger.jsonl", lines)))
    assert ran.exit_code == 1, ran.output[-3000:]
    assert "line 2 (after seq 1) is malformed: reference is neither a string nor null" in _said(ran)
