"""JSONL export -> offline verification, and every kind of tampering reported with its seq."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import multiprocessing
import os
from collections.abc import AsyncGenerator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import AsyncConnection
from sqlalchemy import text as sql
from sqlalchemy.orm import Session, sessionmaker

from pokna.ledger import checkpoint_document, export_aio, store_postgresql, verify_export
from pokna_verify.bounded_input import InputLimitError
from pokna_verify.crypto.errors import NotCanonicalizableError
from pokna_verify.crypto.signing import generate_signing_key
from pokna_verify.ledger import check as audit
from pokna_verify.ledger import scan as audit_scan
from pokna_verify.ledger.chain import document_hash, format_timestamp, line_hash, transaction_document
from pokna_verify.ledger.check import AuditReport
from pokna_verify.ledger.scan import verify_export_stream
from support.driver import export_csv, export_jsonl, on_database, open_account, take_checkpoint
from support.json_strategies import json_like, tricky_text
from support.ledger_reads import balance_of, list_checkpoints, trial_balance
from support.money import Teller
from support.portable_export import portable_jsonl
from support.sessions import unit_of_work
from support.tenant_api import TenantApi

pytest_plugins = ["ledger_fixtures"]
pytestmark = pytest.mark.usefixtures("on_chain_zero")

SIGNER = generate_signing_key()
DEPOSITS_PAST_THE_BUFFERS = 600


def _populate(tenant_api: TenantApi) -> dict[str, str]:
    """Eight transactions over HTTP, all on chain 0: three deposits, then withdrawals and a deposit, one of
    them with metadata."""
    wallets = {name: tenant_api.wallet(external_id=name) for name in ("vigo", "ree", "yees")}
    for name, amount in (("vigo", 300), ("ree", 200), ("yees", 100)):
        _moved(tenant_api.deposit(wallets[name], amount, reference=f"dep-{name}"))
    _moved(tenant_api.withdraw(wallets["ree"], 50))
    _moved(tenant_api.withdraw(wallets["yees"], 50, metadata={"round": "1", "players": "ree yees"}))
    _moved(tenant_api.withdraw(wallets["vigo"], 20))
    _moved(tenant_api.deposit(wallets["yees"], 120))
    _moved(tenant_api.withdraw(wallets["yees"], 30))
    return wallets


def _moved(response: Any) -> None:
    assert response.status_code == 201, response.text


def _export(sessions: sessionmaker[Session], tenant_id: str, **bounds: int) -> list[str]:
    with unit_of_work(sessions) as session:
        return list(export_jsonl(session, tenant_id, **bounds))


def _rehash(line: dict[str, Any]) -> str:
    """An attacker's recomputation, written independently: JCS equals sorted compact JSON for these values."""
    hashed = {
        key: line[key]
        for key in (
            "seq",
            "prev_hash",
            "tenant_id",
            "id",
            "kind",
            "reference",
            "metadata",
            "created_at",
            "postings",
        )
    }
    encoded = json.dumps(hashed, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return hashlib.sha256(encoded).hexdigest()


def _seqs(report: AuditReport) -> set[int | None]:
    return {finding.seq for finding in report.findings}


@pytest.fixture
def exported(sessions: sessionmaker[Session], tenant_api: TenantApi) -> list[str]:
    _populate(tenant_api)
    return _export(sessions, tenant_api.tenant_id)


def test_a_fresh_export_verifies_and_adds_up_to_the_trial_balance(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    tenant_id = tenant_api.tenant_id
    accounts = _populate(tenant_api)
    lines = _export(sessions, tenant_id)
    assert len(lines) == 8
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
    report = verify_export(lines)
    assert report.valid, report.findings
    assert (report.first_seq, report.last_seq, report.transactions, report.postings) == (1, 8, 8, 16)
    assert report.trial_balance() == {"CREDIT": 0}
    with unit_of_work(sessions) as session:
        trial = trial_balance(session, tenant_id)
        assert report.balances == {entry.account_id: entry.balance for entry in trial.accounts}
        assert report.balances[accounts["yees"]] == balance_of(session, accounts["yees"]) == 140
    first = json.loads(lines[0])
    assert first["seq"] == 1
    assert first["prev_hash"] == "0" * 64
    assert first["reference"] == "dep-vigo"
    assert first["postings"][0] == {"account_id": accounts["vigo"], "amount": 300, "currency": "CREDIT"}
    fifth = json.loads(lines[4])
    assert fifth["metadata"] == {"round": "1", "players": "ree yees"}
    assert all(_rehash(json.loads(line)) == json.loads(line)["hash"] for line in lines)


def test_an_export_can_be_cut_by_seq(sessions: sessionmaker[Session], tenant_api: TenantApi) -> None:
    tenant_id = tenant_api.tenant_id
    _populate(tenant_api)
    middle = _export(sessions, tenant_id, chain=0, from_seq=3, to_seq=6)
    assert [json.loads(line)["seq"] for line in middle] == [3, 4, 5, 6]
    report = verify_export(middle)
    assert report.valid, report.findings
    assert any("starts at seq 3" in note for note in report.notes)
    assert _export(sessions, tenant_id, chain=0, from_seq=9) == []


def _edit(lines: list[str], seq: int, change: Callable[[dict[str, Any]], None]) -> list[str]:
    edited = []
    for text in lines:
        line = json.loads(text)
        if line["seq"] == seq:
            change(line)
        edited.append(json.dumps(line) + "\n")
    return edited


def test_an_edited_amount_is_reported_at_its_seq(exported: list[str]) -> None:
    def skim(line: dict[str, Any]) -> None:
        line["postings"][0]["amount"] -= 10
        line["postings"][1]["amount"] += 10  # still balances: only the hash gives it away

    report = verify_export(_edit(exported, 5, skim))
    assert not report.valid
    assert _seqs(report) == {5}
    assert "hash does not match" in report.findings[0].problem


def test_a_one_sided_edit_is_also_unbalanced(exported: list[str]) -> None:
    report = verify_export(_edit(exported, 2, lambda line: line["postings"][0].update(amount=9999)))
    assert _seqs(report) == {2, 8}  # the trial balance finding is reported at the last seq
    problems = " ".join(finding.problem for finding in report.findings)
    assert "does not balance" in problems
    assert "trial balance is off" in problems


def test_a_dropped_line_is_reported_with_the_missing_seq(exported: list[str]) -> None:
    report = verify_export(exported[:3] + exported[4:])
    assert not report.valid
    assert 4 in _seqs(report)
    assert any("seq 4 missing" in finding.problem for finding in report.findings)


def test_reordered_lines_are_reported(exported: list[str]) -> None:
    swapped = [*exported[:4], exported[5], exported[4], *exported[6:]]
    report = verify_export(swapped)
    assert not report.valid
    assert {5, 6} <= _seqs(report)


def test_an_inserted_line_is_reported(exported: list[str]) -> None:
    forged = json.loads(exported[3])
    forged["id"] = "txn_" + "f" * 32
    forged["seq"] = 5
    forged["prev_hash"] = json.loads(exported[3])["hash"]
    forged["hash"] = _rehash(forged)  # a perfectly well-formed line
    report = verify_export([*exported[:4], json.dumps(forged) + "\n", *exported[4:]])
    assert not report.valid
    assert 5 in _seqs(report)
    assert any("appears after" in finding.problem for finding in report.findings)


def test_an_edited_hash_is_reported_at_its_seq_and_the_next(exported: list[str]) -> None:
    report = verify_export(_edit(exported, 6, lambda line: line.update(hash="ab" * 32)))
    assert _seqs(report) == {6, 7}


def test_garbage_lines_are_reported_by_line_number(exported: list[str]) -> None:
    report = verify_export([*exported[:2], "{not json\n", *exported[2:]])
    assert not report.valid
    assert report.findings[0].line == 3
    assert "after seq 2" in report.findings[0].problem
    report = verify_export(_edit(exported, 3, lambda line: line.update(postings="lots")))
    assert any(finding.seq == 3 and "malformed" in finding.problem for finding in report.findings)


def _rewrite_tail(lines: list[str], from_seq: int) -> list[str]:
    """Change history at `from_seq` and recompute every hash after it: the chain alone looks fine."""
    out: list[str] = []
    prev = None
    for text in lines:
        line = json.loads(text)
        if line["seq"] >= from_seq:
            if line["seq"] == from_seq:
                line["postings"][0]["amount"] += 1
                line["postings"][1]["amount"] -= 1
            line["prev_hash"] = prev or line["prev_hash"]
            line["hash"] = _rehash(line)
        prev = line["hash"]
        out.append(json.dumps(line) + "\n")
    return out


def _checkpoint(
    sessions: sessionmaker[Session], tenant_id: str, key: Ed25519PrivateKey = SIGNER
) -> dict[str, Any]:
    with unit_of_work(sessions) as session:
        return checkpoint_document(take_checkpoint(session, tenant_id, key))


def test_a_rewritten_history_passes_the_chain_but_not_a_signed_checkpoint(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    tenant_id = tenant_api.tenant_id
    _populate(tenant_api)
    checkpoint = _checkpoint(sessions, tenant_id)
    assert (checkpoint["seq"], checkpoint["type"]) == (8, "pokna.ledger.checkpoint")
    lines = _export(sessions, tenant_id)
    assert verify_export(lines, checkpoint=checkpoint, public_key=SIGNER.public_key()).valid
    rewritten = _rewrite_tail(lines, 3)
    assert verify_export(rewritten).valid  # why checkpoints exist
    report = verify_export(rewritten, checkpoint=checkpoint, public_key=SIGNER.public_key())
    assert not report.valid
    assert _seqs(report) == {8}
    assert "differs from the signed checkpoint" in report.findings[0].problem


def test_a_truncated_export_fails_against_a_later_checkpoint(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    tenant_id = tenant_api.tenant_id
    _populate(tenant_api)
    checkpoint = _checkpoint(sessions, tenant_id)
    report = verify_export(
        _export(sessions, tenant_id)[:6], checkpoint=checkpoint, public_key=SIGNER.public_key()
    )
    assert not report.valid
    assert "export ends at seq 6" in report.findings[0].problem


def test_a_checkpoint_inside_the_export_pins_that_seq(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    tenant_id = tenant_api.tenant_id
    accounts = _populate(tenant_api)
    checkpoint = _checkpoint(sessions, tenant_id)
    _moved(tenant_api.withdraw(accounts["ree"], 1))
    lines = _export(sessions, tenant_id)
    assert len(lines) == 9
    assert verify_export(lines, checkpoint=checkpoint, public_key=SIGNER.public_key()).valid
    with unit_of_work(sessions) as session:
        listed = list_checkpoints(session, tenant_id)
        assert [checkpoint_document(row) for row in listed] == [checkpoint]


def test_a_forged_or_foreign_checkpoint_is_refused(
    sessions: sessionmaker[Session], tenant_api: TenantApi, make_tenant: Callable[[], str]
) -> None:
    tenant_id = tenant_api.tenant_id
    _populate(tenant_api)
    lines = _export(sessions, tenant_id)
    checkpoint = _checkpoint(sessions, tenant_id)
    stranger = generate_signing_key()
    wrong_key = verify_export(lines, checkpoint=checkpoint, public_key=stranger.public_key())
    assert any("signature" in finding.problem for finding in wrong_key.findings)
    assert [head["chain"] for head in checkpoint["heads"]] == [0]  # this tenant posts on chain 0 only
    seventh = json.loads(lines[6])["hash"]
    forged = {**checkpoint, "seq": 7, "hash": seventh, "heads": [{"chain": 0, "seq": 7, "hash": seventh}]}
    assert any(
        "signature" in f.problem
        for f in verify_export(lines, checkpoint=forged, public_key=SIGNER.public_key()).findings
    )
    other_tenant = make_tenant()
    foreign = _checkpoint(sessions, other_tenant)
    report = verify_export(lines, checkpoint=foreign, public_key=SIGNER.public_key())
    assert any("checkpoint is for tenant" in finding.problem for finding in report.findings)


def test_an_empty_ledger_exports_nothing_and_checkpoints_the_genesis(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    assert _export(sessions, tenant_id) == []
    checkpoint = _checkpoint(sessions, tenant_id)
    assert (checkpoint["seq"], checkpoint["hash"]) == (0, "0" * 64)
    assert verify_export([], checkpoint=checkpoint, public_key=SIGNER.public_key()).valid


def test_csv_has_one_row_per_posting(sessions: sessionmaker[Session], tenant_api: TenantApi) -> None:
    tenant_id = tenant_api.tenant_id
    accounts = _populate(tenant_api)
    with unit_of_work(sessions) as session:
        text = "".join(export_csv(session, tenant_id))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 16
    assert rows[0]["seq"] == "1"
    assert rows[0]["account_id"] == accounts["vigo"]
    assert rows[0]["amount"] == "300"
    assert rows[0]["reference"] == "dep-vigo"
    totals: dict[str, int] = {}
    for row in rows:
        totals[row["account_id"]] = totals.get(row["account_id"], 0) + int(row["amount"])
    assert totals[accounts["yees"]] == 140
    assert sum(totals.values()) == 0


def test_postgresql_builds_the_same_lines_as_the_portable_exporter(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    tenant_id = tenant_api.tenant_id
    accounts = _populate(tenant_api)
    metadata = {"ünï": "\u2028 \U0001f3b2 -9007199254740991", "ctl": "\x01\t", "b": "true", "z": ""}
    _moved(tenant_api.withdraw(accounts["ree"], 1, reference='ref "quoted" \\ back', metadata=metadata))
    database_built = [json.loads(line) for line in export_jsonl(sessions, tenant_id)]
    with sessions() as session:
        portable = [json.loads(line) for line in portable_jsonl(session, tenant_id)]
    assert database_built == portable
    assert len(portable) == 9
    # Every line names its chain first, and the lines come in (chain, seq) order.
    assert all(next(iter(line)) == "chain" for line in database_built)
    positions = [(line["chain"], line["seq"]) for line in database_built]
    assert positions == sorted(positions)
    assert verify_export(json.dumps(line) for line in database_built).valid


# --- large exports: the process pool must find exactly what the line-by-line verification finds ----------


def _generated_export(transactions: int, tenant_id: str = "ten_generated") -> list[str]:
    """An export as `pokna ledger export` writes it, built without a database: transfers among five wallets."""
    wallets = [f"acct_{index:032x}" for index in range(5)]
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    prev_hash = "0" * 64
    lines = []
    for seq in range(1, transactions + 1):
        payer, payee = wallets[seq % 5], wallets[(seq * 3 + 1) % 5]
        amount = seq % 97 + 1
        document = transaction_document(
            seq=seq,
            prev_hash=prev_hash,
            tenant_id=tenant_id,
            transaction_id=f"txn_{seq:032x}",
            kind="ante",
            reference=None if seq % 3 else f"game-{seq}",
            metadata={} if seq % 7 else {"round": seq},
            created_at=format_timestamp(moment + timedelta(milliseconds=seq)),
            postings=[(payer, -amount, "CREDIT"), (payee, amount, "CREDIT")],
        )
        prev_hash = document_hash(document)
        line = {
            key: document[key]
            for key in ("seq", "id", "tenant_id", "kind", "reference", "metadata", "created_at", "postings")
        }
        lines.append(json.dumps({**line, "prev_hash": document["prev_hash"], "hash": prev_hash}) + "\n")
    return lines


def _stream_report(lines: list[str], **options: Any) -> AuditReport:
    return verify_export_stream(io.BytesIO("".join(lines).encode()), processes=2, **options)


def test_a_large_export_is_verified_by_a_process_pool_and_a_tampered_line_is_found() -> None:
    lines = _generated_export(9000)  # > 4 MiB: the size at which the pool starts
    assert len("".join(lines)) > audit_scan._POOL_AFTER_BLOCKS * audit_scan._BLOCK_BYTES
    report = _stream_report(lines)
    assert report.processes == 2
    assert report.blocks_from_workers == len(
        list(audit_scan.whole_line_blocks(io.BytesIO("".join(lines).encode())))
    )
    assert report.valid, report.findings[:3]
    assert (report.first_seq, report.last_seq, report.transactions, report.postings) == (1, 9000, 9000, 18000)
    assert report.to_json() == verify_export(lines).to_json()

    tampered = _edit(
        lines, 6123, lambda line: line["postings"][1].update(amount=line["postings"][1]["amount"] + 1)
    )
    report = _stream_report(tampered)
    assert report.processes == 2
    assert _seqs(report) == {6123, 9000}  # the edit, and the trial balance it leaves off
    assert "seq 6123: hash does not match" in report.findings[0].problem
    assert report.findings == verify_export(tampered).findings


def _swap(lines: list[str], index: int) -> list[str]:
    return [*lines[:index], lines[index + 1], lines[index], *lines[index + 2 :]]


def _with_tenant(lines: list[str], seq: int, tenant_id: str) -> list[str]:
    return _edit(lines, seq, lambda line: line.update(tenant_id=tenant_id))


@pytest.mark.parametrize(
    ("tamper", "expected_seqs"),
    [
        pytest.param(lambda lines: lines, set(), id="untouched"),
        pytest.param(
            lambda lines: _edit(lines, 250, lambda line: line.update(kind="payout")), {250}, id="edited"
        ),
        pytest.param(lambda lines: lines[:1] + lines[2:], {2, 3}, id="second-line-dropped"),
        pytest.param(lambda lines: lines[:399] + lines[400:], {400, 401}, id="dropped"),
        pytest.param(lambda lines: lines[:-1], set(), id="last-line-dropped"),
        pytest.param(lambda lines: lines[5:], set(), id="starts-later"),
        pytest.param(lambda lines: _swap(lines, 130), {131, 132, 133}, id="swapped"),
        pytest.param(lambda lines: [*lines[:300], lines[10], *lines[300:]], {11, 12, 301}, id="replayed"),
        pytest.param(lambda lines: [*lines[:200], "{not json\n", *lines[200:]], {None}, id="garbage"),
        pytest.param(lambda lines: [*lines[:200], "\n", " \n", *lines[200:]], set(), id="blank-lines"),
        pytest.param(
            lambda lines: _edit(lines, 77, lambda line: line.update(hash="ab" * 32)), {77, 78}, id="hash"
        ),
        pytest.param(lambda lines: _with_tenant(lines, 333, "ten_other"), {333}, id="foreign-tenant"),
        pytest.param(
            lambda lines: _generated_export(300, "ten_other") + lines[300:],
            set(range(301, 601)),
            id="tenant-seam",
        ),
        pytest.param(
            lambda lines: _edit(lines, 420, lambda line: line["postings"][0].update(currency="GOLD")),
            {420},
            id="currency",
        ),
        pytest.param(lambda lines: [*lines[:-1], lines[-1].rstrip("\n")], set(), id="no-final-newline"),
        pytest.param(lambda lines: [lines[0].rstrip("\n"), *lines[1:]], {None}, id="two-lines-glued"),
    ],
)
def test_the_pool_reports_exactly_what_the_line_by_line_verification_reports(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    tamper: Callable[[list[str]], list[str]],
    expected_seqs: set[int | None],
) -> None:
    monkeypatch.setattr(audit_scan, "_BLOCK_BYTES", 8 * 1024)  # ~18 lines a block: many seams in 600 lines
    original = _generated_export(600)
    data = "".join(tamper(original)).encode()
    pinned_hash = json.loads(original[499])["hash"]
    checkpoint = {
        "type": audit.CHECKPOINT_TYPE,
        "seq": 500,
        "hash": pinned_hash,
        "tenant_id": "ten_generated",
    }
    for pinned in (None, checkpoint):
        expected = verify_export(io.BytesIO(data), checkpoint=pinned)  # its lines, as iterating a file
        for report in _pool_reports(data, tmp_path, checkpoint=pinned):
            assert report.to_json() == expected.to_json()
            assert report.findings == expected.findings
    assert {finding.seq for finding in expected.findings} == expected_seqs


def _die(*_arguments: object) -> None:
    os._exit(1)  # a worker killed mid-block, as the OOM killer would


def test_a_worker_that_dies_costs_time_not_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers are forked and see this module's patch: every block they take kills them. The pool
    breaks, every block is checked here line by line, and the report is the line-by-line one."""
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("needs fork, for the workers to see the patch")
    monkeypatch.setattr(audit_scan, "_BLOCK_BYTES", 8 * 1024)
    monkeypatch.setattr(audit_scan, "_summarize_block", _die)
    lines = _generated_export(300)
    lines[150] = lines[150].replace('"amount":', '"amount": 1 +', 1)
    data = "".join(lines).encode()
    expected = verify_export(io.BytesIO(data))
    report = verify_export_stream(io.BytesIO(data), processes=2)
    assert report.blocks_from_workers == 0
    assert report.to_json() == expected.to_json()
    assert [finding.seq for finding in report.findings] == [finding.seq for finding in expected.findings]
    assert expected.findings


def _pool_reports(data: bytes, tmp_path: Path, **options: Any) -> list[AuditReport]:
    """From a pipe-like stream (blocks sent to the workers) and from a file (workers read it themselves)."""
    export_file = tmp_path / "export.jsonl"
    export_file.write_bytes(data)
    with export_file.open("rb") as handle:
        reports = [
            verify_export_stream(io.BytesIO(data), processes=2, **options),
            verify_export_stream(handle, processes=2, **options),
        ]
    blocks = len(list(audit_scan.whole_line_blocks(io.BytesIO(data))))
    for report in reports:
        assert report.processes == 2
        # Every block the workers found clean is taken in as it is; the rest are checked here again.
        assert 0 < report.blocks_from_workers <= blocks
        assert report.blocks_from_workers == blocks or not report.valid or report.first_seq != 1
    return reports


def _rechain(lines: list[str], from_seq: int, change: Callable[[dict[str, Any]], object]) -> list[str]:
    """A forger's consistent rewrite: `change` every line from `from_seq` on, then recompute the chain."""
    rewritten: list[str] = []
    prev_hash = None
    for text in lines:
        line = json.loads(text)
        if line["seq"] >= from_seq:
            if line["seq"] > from_seq:
                line["prev_hash"] = prev_hash
            change(line)
            line["hash"] = _rehash(line)
        prev_hash = line["hash"]
        rewritten.append(json.dumps(line) + "\n")
    return rewritten


def _at(seq: int, change: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], object]:
    return lambda line: change(line) if line["seq"] == seq else None


def _in_gold(line: dict[str, Any]) -> None:
    for posting in line["postings"]:
        posting["currency"] = "GOLD"


@pytest.mark.parametrize(
    ("tamper", "expected_seqs"),
    [
        pytest.param(
            lambda lines, seam: _rechain(
                lines, seam, _at(seam, lambda line: line.update(prev_hash="ab" * 32))
            ),
            lambda seam: {seam},
            id="prev-hash",
        ),
        pytest.param(
            lambda lines, seam: _rechain(lines, 1, _at(1, lambda line: line.update(prev_hash="ab" * 32))),
            lambda seam: {1},
            id="genesis",
        ),
        pytest.param(
            lambda lines, seam: _rechain(lines, seam, lambda line: line.update(seq=line["seq"] + 1)),
            lambda seam: {seam},
            id="seq-gap",
        ),
        pytest.param(
            lambda lines, seam: _rechain(lines, seam, lambda line: line.update(tenant_id="ten_other")),
            lambda seam: set(range(seam, 601)),
            id="tenant",
        ),
        pytest.param(
            lambda lines, seam: _rechain(lines, seam, _in_gold),
            lambda seam: set(range(seam, 601)),
            id="currency",
        ),
        pytest.param(
            lambda lines, seam: _rechain(
                lines, seam, _at(seam, lambda line: line["postings"][0].update(amount=7))
            ),
            lambda seam: {seam, 600},
            id="unbalanced",
        ),
        pytest.param(
            lambda lines, seam: _rechain(lines, seam, _at(seam, lambda line: line.update(postings=[]))),
            lambda seam: {seam},
            id="no-postings",
        ),
    ],
)
def test_a_consistent_rewrite_from_a_block_seam_is_reported_as_line_by_line(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    tamper: Callable[[list[str], int], list[str]],
    expected_seqs: Callable[[int], set[int | None]],
) -> None:
    """Every line of the rewritten blocks is self-consistent: only the checks across a seam can catch it."""
    monkeypatch.setattr(audit_scan, "_BLOCK_BYTES", 8 * 1024)
    original = _generated_export(600)
    starts = [
        json.loads(block.split(b"\n", 1)[0])["seq"]
        for block in audit_scan.whole_line_blocks(io.BytesIO("".join(original).encode()))
    ]
    seam = starts[len(starts) // 2]
    data = "".join(tamper(original, seam)).encode()
    assert [
        json.loads(block.split(b"\n", 1)[0])["seq"]
        for block in audit_scan.whole_line_blocks(io.BytesIO(data))
    ][len(starts) // 2] in (seam, seam + 1)
    expected = verify_export(io.BytesIO(data))
    for report in _pool_reports(data, tmp_path):
        assert report.to_json() == expected.to_json()
    assert {finding.seq for finding in expected.findings} == expected_seqs(seam)


_json_values = json_like(max_leaves=12)
_exported_lines = st.fixed_dictionaries(
    {
        "seq": st.one_of(st.integers(min_value=-(2**60), max_value=2**60), st.booleans()),
        "id": tricky_text,
        "tenant_id": tricky_text,
        "kind": tricky_text,
        "reference": st.one_of(st.none(), tricky_text, st.integers()),
        "metadata": st.one_of(
            st.just({}), st.dictionaries(tricky_text, _json_values, max_size=3), _json_values
        ),
        "created_at": tricky_text,
        "postings": st.lists(
            st.fixed_dictionaries(
                {
                    "account_id": st.one_of(tricky_text, st.integers()),
                    "amount": st.one_of(st.integers(min_value=-(2**60), max_value=2**60), st.floats()),
                    "currency": tricky_text,
                },
                optional={"leg": st.integers()},
            ),
            max_size=3,
        ),
        "prev_hash": tricky_text,
        "hash": tricky_text,
    }
)


def _hash_or_refusal(hash_of: Callable[[dict[str, Any]], str], line: dict[str, Any]) -> str:
    try:
        return hash_of(line)
    except NotCanonicalizableError:
        return "refused"


@settings(max_examples=3000, deadline=None)
@given(line=_exported_lines)
def test_the_verifiers_line_hash_is_document_hash(line: dict[str, Any]) -> None:
    assert _hash_or_refusal(line_hash, line) == _hash_or_refusal(document_hash, line)


# What PostgreSQL's own JSON functions make of the same rows: the JSONL export's bytes before it wrote
# the lines in Python. The format is a public contract, so they must not change by a byte.
_LINES_BY_JSON_BUILD_OBJECT = sql(
    r"""
    SELECT json_build_object(
        'chain', t.chain, 'seq', t.seq, 'id', t.id, 'tenant_id', t.tenant_id, 'kind', t.kind, 'reference', t.reference,
        'metadata', t.metadata,
        'created_at', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24\:MI\:SS.US"Z"'),
        'postings', (
            SELECT json_agg(
                json_build_object('account_id', p.account_id, 'amount', p.amount, 'currency', p.currency)
                ORDER BY p.leg
            )
            FROM posting AS p WHERE p.transaction_id = t.id
        ),
        'prev_hash', t.prev_hash, 'hash', t.hash
    )::text || E'\n'
    FROM journal_transaction AS t
    WHERE t.tenant_id = :tenant_id
    ORDER BY t.chain, t.seq
    """
)


def test_postgresql_lines_are_byte_for_byte_json_build_object(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    tenant_id = tenant_api.tenant_id
    accounts = _populate(tenant_api)
    for reference, metadata in (
        ('"quoted" \\ back\\slash /', {"ünï": "\u2028 \U0001f3b2 -9007199254740991", "b": "true"}),
        ("\x01\x1f\t\n\r\x08\x0c\x7f é", {"ctl": '\x01\x1f"\\', "z": "", "nested": '{"b": [1, 2]}'}),
    ):
        _moved(tenant_api.withdraw(accounts["ree"], 1, reference=reference, metadata=metadata))
    with unit_of_work(sessions) as session:
        exported = list(export_jsonl(session, tenant_id))
        built = list(session.execute(_LINES_BY_JSON_BUILD_OBJECT, {"tenant_id": tenant_id}).scalars())
    assert len(exported) == 10
    assert exported == built
    assert verify_export(exported).valid


def test_leaving_a_postgresql_export_early_leaves_the_transaction_usable(
    sessions: sessionmaker[Session], teller: Teller, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing the export between pages leaves nothing running; the caller's transaction goes on."""
    tenant_id = teller.tenant_id
    monkeypatch.setattr(store_postgresql, "PAGE_TRANSACTIONS", 10)
    with unit_of_work(sessions) as session:
        wallet = open_account(session, tenant_id=tenant_id, kind="player_wallet", external_id="big").id
    # The most metadata a deposit request may carry (20 values of 200 characters): ~2.6 MB of lines, more
    # than the socket buffers hold.
    padding = {f"pad{key:02}": "x" * 200 for key in range(20)}

    async def deposits() -> None:
        for _ in range(DEPOSITS_PAST_THE_BUFFERS):
            await teller.deposit(wallet, 1, metadata=padding)

    teller.run(deposits())

    async def left_early(connection: AsyncConnection[Any]) -> None:
        lines = cast(
            AsyncGenerator[str, None], export_aio.export_jsonl(connection, tenant_id, None, None, None)
        )
        assert [json.loads(await anext(lines))["seq"] for _ in range(13)] == list(range(1, 14))
        await lines.aclose()
        assert await _balance(connection, wallet) == DEPOSITS_PAST_THE_BUFFERS
        assert len([line async for line in export_aio.export_jsonl(connection, tenant_id, 0, None, 5)]) == 5

    on_database(sessions, left_early)


def test_the_connection_answers_between_any_two_lines_of_an_export(
    sessions: sessionmaker[Session], tenant_api: TenantApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an audit bundle does: read on the export's connection while the export is part-way. A stream
    still open on the connection once blocked that read for ever; and the transaction may end between two
    lines without the export losing its place."""
    tenant_id = tenant_api.tenant_id
    monkeypatch.setattr(store_postgresql, "PAGE_TRANSACTIONS", 7)
    wallet = tenant_api.wallet()
    for amount in range(1, 31):
        _moved(tenant_api.deposit(wallet, amount))
    whole = export_jsonl(sessions, tenant_id)

    async def interleaved(connection: AsyncConnection[Any]) -> list[str]:
        lines = []
        async for line in export_aio.export_jsonl(connection, tenant_id, None, None, None):
            lines.append(line)
            assert await _balance(connection, wallet) == sum(range(1, 31))
            if len(lines) % 3 == 1:
                await connection.commit()
        return lines

    assert on_database(sessions, interleaved) == whole
    assert [json.loads(line)["seq"] for line in whole] == list(range(1, 31))


async def _balance(connection: AsyncConnection[Any], account_id: str) -> int:
    found = await (
        await connection.execute("SELECT balance FROM account WHERE id = %s", (account_id,))
    ).fetchone()
    assert found is not None
    return int(found[0])


def test_a_number_past_the_limit_is_unusable_input_naming_its_line_not_a_crash(tmp_path: Path) -> None:
    """An integer of 5,000 digits is valid JSON that json.loads refuses (int_max_str_digits) and no verifier
    reads (pokna_verify.bounded_input): nothing was judged, so it is no finding but unusable input."""
    lines = _generated_export(20)
    lines[10] = lines[10].replace('"seq":', '"seq":' + "9" * 5000 + ',"was":', 1)
    data = "".join(lines).encode()
    with pytest.raises(InputLimitError, match=r"^line 11: a number of 5,000 digits, more than the 100"):
        verify_export(io.BytesIO(data))
