"""JSONL export -> offline verification, and every kind of tampering reported with its seq."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import unit_of_work
from pokna.fairness.signing import generate_signing_key
from pokna.ledger import (
    Move,
    balance_of,
    checkpoint_document,
    deposit,
    export_csv,
    export_jsonl,
    list_checkpoints,
    open_account,
    post_transfers,
    take_checkpoint,
    trial_balance,
    verify_export,
    withdraw,
)
from pokna.ledger.audit import AuditReport

pytest_plugins = ["ledger_fixtures"]

SIGNER = generate_signing_key()


def _populate(sessions: sessionmaker[Session], tenant_id: str) -> dict[str, str]:
    """Eight transactions: 3 deposits, a game of antes and a payout, a withdrawal."""
    with unit_of_work(sessions) as session:
        wallets = {
            name: open_account(session, tenant_id=tenant_id, kind="player_wallet", external_id=name).id
            for name in ("vigo", "ree", "yees")
        }
        for name, amount in (("vigo", 300), ("ree", 200), ("yees", 100)):
            deposit(
                session, tenant_id=tenant_id, account_id=wallets[name], amount=amount, reference=f"dep-{name}"
            )
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="game-1").id
    with unit_of_work(sessions) as session:
        post_transfers(
            session,
            tenant_id=tenant_id,
            reference="game-1",
            metadata={"round": 1, "players": ["ree", "yees"]},
            moves=[
                Move("ante", wallets["ree"], pot, 50),
                Move("ante", wallets["yees"], pot, 50),
                Move("vigo_contribution", wallets["vigo"], pot, 20),
                Move("payout", pot, wallets["yees"], 120),
            ],
        )
    with unit_of_work(sessions) as session:
        withdraw(session, tenant_id=tenant_id, account_id=wallets["yees"], amount=30)
    return {**wallets, "pot": pot}


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
def exported(sessions: sessionmaker[Session], tenant_id: str) -> list[str]:
    _populate(sessions, tenant_id)
    return _export(sessions, tenant_id)


def test_a_fresh_export_verifies_and_adds_up_to_the_trial_balance(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    accounts = _populate(sessions, tenant_id)
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
    game = json.loads(lines[4])
    assert game["metadata"] == {"round": 1, "players": ["ree", "yees"]}
    assert all(_rehash(json.loads(line)) == json.loads(line)["hash"] for line in lines)


def test_an_export_can_be_cut_by_seq(sessions: sessionmaker[Session], tenant_id: str) -> None:
    _populate(sessions, tenant_id)
    middle = _export(sessions, tenant_id, from_seq=3, to_seq=6)
    assert [json.loads(line)["seq"] for line in middle] == [3, 4, 5, 6]
    report = verify_export(middle)
    assert report.valid, report.findings
    assert any("starts at seq 3" in note for note in report.notes)
    assert _export(sessions, tenant_id, from_seq=9) == []


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
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    _populate(sessions, tenant_id)
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
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    _populate(sessions, tenant_id)
    checkpoint = _checkpoint(sessions, tenant_id)
    report = verify_export(
        _export(sessions, tenant_id)[:6], checkpoint=checkpoint, public_key=SIGNER.public_key()
    )
    assert not report.valid
    assert "export ends at seq 6" in report.findings[0].problem


def test_a_checkpoint_inside_the_export_pins_that_seq(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    accounts = _populate(sessions, tenant_id)
    checkpoint = _checkpoint(sessions, tenant_id)
    with unit_of_work(sessions) as session:
        withdraw(session, tenant_id=tenant_id, account_id=accounts["ree"], amount=1)
    lines = _export(sessions, tenant_id)
    assert len(lines) == 9
    assert verify_export(lines, checkpoint=checkpoint, public_key=SIGNER.public_key()).valid
    with unit_of_work(sessions) as session:
        listed = list_checkpoints(session, tenant_id)
        assert [checkpoint_document(row) for row in listed] == [checkpoint]


def test_a_forged_or_foreign_checkpoint_is_refused(
    sessions: sessionmaker[Session], tenant_id: str, make_tenant: Callable[[], str]
) -> None:
    _populate(sessions, tenant_id)
    lines = _export(sessions, tenant_id)
    checkpoint = _checkpoint(sessions, tenant_id)
    stranger = generate_signing_key()
    wrong_key = verify_export(lines, checkpoint=checkpoint, public_key=stranger.public_key())
    assert any("signature" in finding.problem for finding in wrong_key.findings)
    forged = {**checkpoint, "seq": 7, "hash": json.loads(lines[6])["hash"]}
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


def test_csv_has_one_row_per_posting(sessions: sessionmaker[Session], tenant_id: str) -> None:
    accounts = _populate(sessions, tenant_id)
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


@pytest.mark.postgres_only
def test_postgresql_builds_the_same_lines_as_the_portable_exporter(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    from pokna.ledger.export import SeqRange, _jsonl_generic, _jsonl_postgresql

    accounts = _populate(sessions, tenant_id)
    with unit_of_work(sessions) as session:
        withdraw(
            session,
            tenant_id=tenant_id,
            account_id=accounts["ree"],
            amount=1,
            reference='ref "quoted" \\ back',
            metadata={
                "ünï": ["\u2028", "\U0001f3b2", {"n": -(2**53 - 1)}],
                "ctl": "\x01\t",
                "b": True,
                "z": None,
            },
        )
    with unit_of_work(sessions) as session:
        seqs = SeqRange(1, 9)
        database_built = [json.loads(line) for line in _jsonl_postgresql(session, tenant_id, seqs)]
        portable = [json.loads(line) for line in _jsonl_generic(session, tenant_id, seqs)]
    assert database_built == portable
    assert len(portable) == 9
    assert verify_export(json.dumps(line) for line in database_built).valid
