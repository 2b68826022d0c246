"""Hostile files a fuzzing round found crashing the verifiers (the hostile-files task after issue 46): each was
a traceback instead of an answer. Every case here runs through both command lines (the `verify_cli`
fixture) on a file made as the service makes it, changed as an attacker would, and must end in a documented
exit code with the verifier's own words. No database: the exports are written line by line as `pokna ledger
export` writes them."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pokna_verify.bundle.scan import verify_bundle
from pokna_verify.ledger import findings
from pokna_verify.ledger.chain import document_hash, format_timestamp, transaction_document
from pokna_verify.ledger.scan import verify_export_stream
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


def test_a_file_of_broken_lines_keeps_the_first_findings_and_counts_the_rest(
    verify_cli: VerifyCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A million lines of `{}` (3 MB) held a million findings in memory (over 300 MB) and printed 98 MB;
    any number of lines is read, so the findings kept are bounded instead (10,000 as shipped, 50 here) and
    the rest counted (a fuzzing round's find)."""
    monkeypatch.setattr(findings, "MAX_FINDINGS_KEPT", 50)
    export = tmp_path / "broken.jsonl"
    export.write_text("{}\n" * 120)
    report = verify_export_stream(io.BytesIO(export.read_bytes()))
    assert (len(report.findings), report.findings.dropped, report.valid) == (50, 70, False)
    assert report.to_json()["findings_not_listed"] == 70

    ran = verify_cli("audit", "verify", str(export))
    assert ran.exit_code == 1, ran.output[-3000:]
    shown = _said(ran).splitlines()
    assert sum("FAIL" in line for line in shown) == 50
    assert shown[-2:] == [
        "  ... and 70 more finding(s), not listed: the first 50 are",
        "INVALID: 120 finding(s)",
    ]

    bundle = tmp_path / "broken-bundle.jsonl"
    bundle.write_text('{"type": "pokna.audit.bundle"}\n' + "{}\n" * 120)
    ran = verify_cli("audit", "verify", str(bundle))
    assert ran.exit_code == 1, ran.output[-3000:]
    shown = _said(ran).splitlines()
    assert sum("FAIL" in line for line in shown) == 50
    assert shown[-2].endswith("more finding(s), not listed: the first 50 are"), shown[-3:]
    assert int(shown[-1].split()[1]) > 120, shown[-1]  # every broken line, and what the header lacks


def test_a_bundle_counts_the_ledgers_findings_past_the_first_ones_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bundle's transactions are checked by the ledger's own audit, which keeps its first findings and
    counts the rest; the bundle's report took the kept ones and lost that count, so it said fewer findings
    than it found. However many are kept, the total is the same."""
    lines = _export_lines(120)
    for line in lines:
        line["metadata"] = {"edited": True}  # each hash no longer matches: a ledger finding per line
    bundle = ['{"type": "pokna.audit.bundle"}\n'] + [
        json.dumps({"type": "transaction", **line}) + "\n" for line in lines
    ]
    every = verify_bundle(bundle, processes=1)
    assert every.findings.dropped == 0
    assert sum("hash does not match" in finding.problem for finding in every.findings) == 120

    monkeypatch.setattr(findings, "MAX_FINDINGS_KEPT", 50)
    kept = verify_bundle(bundle, processes=1)
    assert (len(kept.findings), kept.findings.total) == (50, len(every.findings))
    assert kept.to_json()["findings_not_listed"] == len(every.findings) - 50


def test_findings_added_in_any_way_are_kept_to_the_first_ones_and_the_rest_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only append was bounded: extend or += (which no check uses yet) would have kept every finding."""
    monkeypatch.setattr(findings, "MAX_FINDINGS_KEPT", 3)
    extended: findings.KeptFindings[int] = findings.KeptFindings()
    extended.extend(range(5))
    added: findings.KeptFindings[int] = findings.KeptFindings()
    added += range(5)
    added += [5]
    assert (list(extended), extended.dropped) == ([0, 1, 2], 2)
    assert (list(added), added.dropped, added.total) == ([0, 1, 2], 3, 6)
