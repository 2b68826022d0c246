"""`pokna audit verify` and `pokna-verify audit` on large inputs (verified by a process pool) and on stdin. No database needed."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pokna_verify.ledger import scan as audit_scan
from pokna_verify.ledger.chain import document_hash, format_timestamp, transaction_document
from pokna_verify.ledger.check import verify_export
from support.verify_cli import VerifyCli

EXPORT_KEYS = ("seq", "id", "tenant_id", "kind", "reference", "metadata", "created_at", "postings")


def _export_lines(transactions: int) -> list[str]:
    """Transfers between three wallets, written as `pokna ledger export` writes them."""
    wallets = [f"acct_{index:032x}" for index in range(3)]
    prev_hash = "0" * 64
    lines = []
    for seq in range(1, transactions + 1):
        amount = seq % 89 + 1
        document = transaction_document(
            seq=seq,
            prev_hash=prev_hash,
            tenant_id="ten_cli",
            transaction_id=f"txn_{seq:032x}",
            kind="ante",
            reference=None,
            metadata={},
            created_at=format_timestamp(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seq)),
            postings=[(wallets[seq % 3], -amount, "CREDIT"), (wallets[(seq + 1) % 3], amount, "CREDIT")],
        )
        line = {key: document[key] for key in EXPORT_KEYS}
        prev_hash = document_hash(document)
        lines.append(json.dumps({**line, "prev_hash": document["prev_hash"], "hash": prev_hash}) + "\n")
    return lines


def test_a_large_export_with_one_edited_line_is_invalid_at_that_seq(
    verify_cli: VerifyCli, tmp_path: Path
) -> None:
    lines = _export_lines(12_000)  # ~5 MiB: verified by the process pool
    export = tmp_path / "ledger.jsonl"
    export.write_text("".join(lines))
    assert export.stat().st_size > audit_scan._POOL_AFTER_BLOCKS * audit_scan._BLOCK_BYTES
    valid = verify_cli("audit", "verify", str(export))
    assert valid.exit_code == 0, valid.output
    assert "seq 1-12000, 12000 transactions, 24000 postings" in valid.output

    edited = json.loads(lines[9_876])
    edited["postings"][0]["amount"] -= 1
    edited["postings"][1]["amount"] += 1
    lines[9_876] = json.dumps(edited) + "\n"
    export.write_text("".join(lines))
    result = verify_cli("audit", "verify", str(export), "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert [(finding["line"], finding["seq"]) for finding in report["findings"]] == [(9_877, 9_877)]
    assert "hash does not match" in report["findings"][0]["problem"]
    assert report == verify_export(lines).to_json()


def test_verify_reads_the_export_from_stdin(verify_cli: VerifyCli) -> None:
    lines = _export_lines(40)
    result = verify_cli("audit", "verify", "-", input="".join(lines).encode())
    assert result.exit_code == 0, result.output
    assert "seq 1-40, 40 transactions, 80 postings" in result.output
    dropped = verify_cli("audit", "verify", "-", input="".join(lines[:20] + lines[21:]).encode())
    assert dropped.exit_code == 1
    assert "seq 21 missing before seq 22" in dropped.output


def test_a_beacon_chain_is_for_a_bundle_and_must_be_a_drand_info_document(
    verify_cli: VerifyCli, tmp_path: Path
) -> None:
    export, chain = tmp_path / "ledger.jsonl", tmp_path / "info.json"
    export.write_text("".join(_export_lines(3)))
    chain.write_text(json.dumps({"public_key": "ab", "period": 3}))  # no genesis_time
    unreadable = verify_cli("audit", "verify", str(export), "--beacon-chain", str(chain))
    assert unreadable.exit_code == 2, unreadable.output
    assert "genesis_time" in unreadable.output
    chain.write_text(json.dumps({"public_key": "ab", "period": 3, "genesis_time": 1, "hash": "cd"}))
    on_an_export = verify_cli("audit", "verify", str(export), "--beacon-chain", str(chain), "--json")
    assert on_an_export.exit_code == 2, on_an_export.output
    assert "a ledger export holds no games" in json.loads(on_an_export.output)["error"]


def _chain_lines(chain: int, transactions: int) -> list[dict[str, object]]:
    """One chain of a journal since chains, each line carrying its `chain` as `pokna ledger export` writes it."""
    wallets = [f"acct_{index:032x}" for index in range(3)]
    prev_hash = "0" * 64
    lines: list[dict[str, object]] = []
    for seq in range(1, transactions + 1):
        document = transaction_document(
            chain=chain,
            seq=seq,
            prev_hash=prev_hash,
            tenant_id="ten_cli",
            transaction_id=f"txn_{chain:02d}{seq:030x}",
            kind="ante",
            reference=None,
            metadata={},
            created_at=format_timestamp(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seq)),
            postings=[(wallets[seq % 3], -seq, "CREDIT"), (wallets[(seq + chain) % 3 or 1], seq, "CREDIT")],
        )
        prev_hash = document_hash(document)
        lines.append({**document, "chain": chain, "hash": prev_hash})
    return lines


def test_verify_prints_each_chain_and_names_a_finding_by_its_chain(verify_cli: VerifyCli) -> None:
    chains = {0: _chain_lines(0, 4), 3: _chain_lines(3, 6), 7: _chain_lines(7, 2)}
    lines = [json.dumps(line) + "\n" for chain in sorted(chains) for line in chains[chain]]
    result = verify_cli("audit", "verify", "-", input="".join(lines).encode())
    assert result.exit_code == 0, result.output
    assert "3 chains, 12 transactions, 24 postings" in result.output
    assert f"  chain 3        seq 1-6, 6 transactions, head hash {chains[3][-1]['hash']}\n" in result.output
    assert f"  chain 0        seq 1-4, 4 transactions, head hash {chains[0][-1]['hash']}\n" in result.output

    dropped = [line for line in lines if json.loads(line)["id"] != chains[3][2]["id"]]
    result = verify_cli("audit", "verify", "-", input="".join(dropped).encode())
    assert result.exit_code == 1
    assert "chain 3 seq 3 missing before chain 3 seq 4 (dropped or reordered)" in result.output
    assert "FAIL  chain 3 seq 3" in result.output
    report = json.loads(verify_cli("audit", "verify", "-", "--json", input="".join(dropped).encode()).output)
    assert {(finding["chain"], finding["seq"]) for finding in report["findings"]} == {(3, 3), (3, 4)}
    assert [(entry["chain"], entry["last_seq"]) for entry in report["chains"]] == [(0, 4), (3, 6), (7, 2)]
