"""The auditor closes the loop (issue 47): a bundle of the whole books carries the tenant's public log
checkpoint and its leaves, and `pokna-verify audit` checks completeness both ways, the checkpoint's ledger
heads against the books, and the log's consistency with the previous bundle's checkpoint. Real games over
HTTP, the real sequencer, real PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from pokna.bundles import log_part, writer
from pokna.db.models.game import Game as GameRow
from pokna.ledger import store_postgresql
from pokna.public_log.sequencer import LogSigner
from pokna.runtime import Runtime
from pokna_verify.bundle import scan as bundle_scan
from pokna_verify.bundle.log_records import LOG_CHECKPOINT, LOG_LEAF, NO_LOG
from pokna_verify.bundle.report import BundleReport, Verdict
from pokna_verify.bundle.scan import verify_bundle, verify_bundle_stream
from pokna_verify.tlog.checkpoint import Checkpoint, ledger_head_lines, parse_checkpoint
from pokna_verify.tlog.note import sign_note
from support.audit_bundles import PlayedBooks, lines_of, play_books, records
from support.game_logs import ORIGIN_PREFIX, sequence_all
from support.game_play import obliging, play
from support.verify_cli import VerifyCli


def _signer(runtime: Runtime) -> LogSigner:
    return LogSigner(ORIGIN_PREFIX, runtime.keys.signing_key)


def _logged_books(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, games: int = 5
) -> PlayedBooks:
    books = play_books(client, sessions, games=games)
    assert sequence_all(runtime.aio, _signer(runtime)) >= games
    return books


def _problems(report: BundleReport) -> list[tuple[str, str | None, str]]:
    return [(finding.record, finding.record_id, finding.problem) for finding in report.findings]


def _play_one(books: PlayedBooks) -> str:
    wallets = [books.api.wallet(100) for _ in range(3)]
    game = books.api.create_game(wallets[0], wallets[1:], stake=5, challenge_raise=3)
    return str(play([books.api], game, obliging)["id"])


def _books_ahead(checkpoint: Checkpoint) -> Checkpoint:
    """The checkpoint with its last ledger head one transaction further, well formed and signed again."""
    heads = dict(checkpoint.ledger_heads)
    chain = max(heads)
    heads[chain] = (heads[chain][0] + 1, "ee" * 32)
    return Checkpoint(checkpoint.origin, checkpoint.size, checkpoint.root_hash, ledger_head_lines(heads))


def _resigned(note: str, runtime: Runtime, change: Any) -> str:
    """The note's checkpoint changed by `change` and signed again with the operator's own key: a lie the
    operator can tell, since it holds the key."""
    checkpoint = parse_checkpoint(note.split("\n\n", 1)[0] + "\n")
    changed: Checkpoint = change(checkpoint)
    return sign_note(changed.to_text(), changed.origin, runtime.keys.signing_key)


def test_a_bundle_carries_the_log_and_verifies_with_it(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    books = _logged_books(client, sessions, runtime)
    after = _play_one(books)  # finished after the pass: in the books, not yet in the log, and that is fine
    documents = records(books.bundle())
    assert documents[2]["type"] == LOG_CHECKPOINT
    assert documents[2]["format"] == 1
    leaves = [document for document in documents if document["type"] == LOG_LEAF]
    assert [leaf["index"] for leaf in leaves] == list(range(len(books.game_ids)))
    assert {json.loads(leaf["entry"])["game_id"] for leaf in leaves} == set(books.game_ids)
    assert documents[-1]["records"][LOG_LEAF] == len(leaves)
    assert any(d["type"] == "game" and d["game_id"] == after for d in documents)

    report = verify_bundle(lines_of(documents), keys=books.key_ring)
    assert report.verdict is Verdict.VALID, report.to_json()
    assert "public log" in report.checks
    assert NO_LOG not in report.notes


def test_a_bundle_without_a_log_record_verifies_as_before_and_says_so(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    books = play_books(client, sessions, games=2)  # the sequencer never ran: nothing logged
    documents = records(books.bundle())
    assert not any(d["type"] in (LOG_CHECKPOINT, LOG_LEAF) for d in documents)
    assert set(documents[-1]["records"]) == {"account", "game", "transaction", "pokna.ledger.checkpoint"}
    report = verify_bundle(lines_of(documents), keys=books.key_ring)
    assert report.verdict is Verdict.VALID, report.to_json()
    assert NO_LOG in report.notes


def test_the_log_cannot_be_taken_out_of_a_bundle_that_carries_it(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    """The signed header names the log's size: without its records (and the trailer counted again) the
    bundle does not pass for one that never carried them."""
    books = _logged_books(client, sessions, runtime)
    documents = [d for d in records(books.bundle()) if d["type"] not in (LOG_CHECKPOINT, LOG_LEAF)]
    assert documents[0]["log_size"] == len(books.game_ids)
    for name in (LOG_CHECKPOINT, LOG_LEAF):
        del documents[-1]["records"][name]
    report = verify_bundle(lines_of(documents), keys=books.key_ring)
    assert [(record, problem) for record, _, problem in _problems(report)] == [
        (LOG_CHECKPOINT, f"the header signs a public log of {len(books.game_ids)} games, not carried")
    ]


def test_a_game_dropped_from_the_bundle_is_named(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    books = _logged_books(client, sessions, runtime)
    dropped = books.game_ids[2]
    documents = [
        d
        for d in records(books.bundle())
        if not (d["type"] == "game" and d["game_id"] == dropped)
        and not (d["type"] == "transaction" and d["metadata"].get("game_id") == dropped)
    ]
    report = verify_bundle(lines_of(documents), keys=books.key_ring)
    assert report.verdict is Verdict.INVALID
    assert any(
        record == LOG_LEAF and name == dropped and "left out of the bundle" in problem
        for record, name, problem in _problems(report)
    ), report.to_json()


def test_a_finished_game_kept_out_of_the_log_is_named(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    books = play_books(client, sessions, games=4)
    hidden = books.game_ids[2]
    with sessions.begin() as session:  # the operator marks it logged, so no pass ever appends it
        session.execute(update(GameRow).where(GameRow.id == hidden).values(log_index=10**9))
    assert sequence_all(runtime.aio, _signer(runtime)) == 3
    report = verify_bundle(books.bundle(), keys=books.key_ring)
    assert report.verdict is Verdict.INVALID
    assert [(record, name) for record, name, problem in _problems(report) if "not logged" in problem] == [
        ("game", hidden)
    ], report.to_json()


def test_a_tampered_leaf_or_checkpoint_fails(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    books = _logged_books(client, sessions, runtime)
    documents = records(books.bundle())
    leaf = next(d for d in documents if d["type"] == LOG_LEAF and d["index"] == 0)
    entry = json.loads(leaf["entry"])
    entry["proof_sha256"] = "0" * 64
    leaf["entry"] = json.dumps(entry, separators=(",", ":"), sort_keys=True)
    problems = _problems(verify_bundle(lines_of(documents), keys=books.key_ring))
    assert any("do not rebuild the signed root" in problem for _, _, problem in problems), problems
    assert any(name == entry["game_id"] and "is not game" in problem for _, name, problem in problems)

    # The leaves belong after the journal: one moved before it is a finding.
    documents = records(books.bundle())
    first_leaf = next(d for d in documents if d["type"] == LOG_LEAF)
    documents.remove(first_leaf)
    documents.insert(3, first_leaf)
    problems = _problems(verify_bundle(lines_of(documents), keys=books.key_ring))
    assert any("a journal record after the log's leaves" in problem for _, _, problem in problems), problems

    # A game cancelled before its antes moved no money: the books hold no record of it, so its leaf
    # carries its proof. Changed, it is not the logged game's; taken away, the game is left out.
    documents = records(books.bundle())
    moneyless = next(d for d in documents if d["type"] == LOG_LEAF and "proof" in d)
    cancelled = moneyless["proof"]["game_id"]
    assert cancelled == books.game_ids[1]
    moneyless["proof"]["outcome"]["x"] = 1
    problems = _problems(verify_bundle(lines_of(documents), keys=books.key_ring))
    assert any(
        name == cancelled and "logged without a record in the books" in problem
        for _, name, problem in problems
    ), problems
    del moneyless["proof"]
    problems = _problems(verify_bundle(lines_of(documents), keys=books.key_ring))
    assert any(name == cancelled and "left out" in problem for _, name, problem in problems), problems

    documents = records(books.bundle())
    note = documents[2]["checkpoint"]
    lines = note.split("\n")
    lines[1] = str(int(lines[1]) - 1)  # one game fewer, the signature left as it was
    documents[2]["checkpoint"] = "\n".join(lines)
    problems = _problems(verify_bundle(lines_of(documents), keys=books.key_ring))
    signed = [problem for record, _, problem in problems if record == LOG_CHECKPOINT]
    assert len(signed) == 1, problems
    assert "invalid signature" in signed[0]


def test_ledger_heads_that_are_not_the_bundles_are_named(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    books = _logged_books(client, sessions, runtime)
    documents = records(books.bundle())

    def other_books(checkpoint: Checkpoint) -> Checkpoint:
        heads = checkpoint.ledger_heads
        chain, (_seq, _hash) = sorted(heads.items())[0]
        lines = tuple(
            f"ledger {c} {s} {'ab' * 32 if c == chain else h}" for c, (s, h) in sorted(heads.items())
        )
        return Checkpoint(checkpoint.origin, checkpoint.size, checkpoint.root_hash, lines)

    documents[2]["checkpoint"] = _resigned(documents[2]["checkpoint"], runtime, other_books)
    report = verify_bundle(lines_of(documents), keys=books.key_ring)
    assert report.verdict is Verdict.INVALID
    assert [(record, problem.split(":")[0]) for record, _, problem in _problems(report)] == [
        (LOG_CHECKPOINT, "ledger heads mismatch")
    ], report.to_json()


def test_a_bundle_past_every_batch_verifies_with_the_log(
    client: TestClient,
    sessions: sessionmaker[Session],
    runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Every batch of the writer (journal, export page, leaves) and of the sequencer made tiny, so a few
    games cross each boundary many times; the last pass takes a full batch and so signs the heads of the
    pass before it, which left nothing waiting."""
    monkeypatch.setattr(writer, "BATCH_TRANSACTIONS", 3)
    monkeypatch.setattr(log_part, "LEAF_BATCH", 2)
    monkeypatch.setattr(store_postgresql, "PAGE_TRANSACTIONS", 4)
    books = play_books(client, sessions, games=6)
    signer = _signer(runtime)
    assert sequence_all(runtime.aio, signer, batch=4) == 4
    assert sequence_all(runtime.aio, signer, batch=4) == 2
    more = [_play_one(books) for _ in range(2)]
    assert sequence_all(runtime.aio, signer, batch=2) == 2  # a full batch: the heads stay the last pass's
    documents = records(books.bundle())
    assert len([d for d in documents if d["type"] == LOG_LEAF]) == 8
    assert {d["game_id"] for d in documents if d["type"] == "game"} >= set(more)
    report = verify_bundle(lines_of(documents), keys=books.key_ring)
    assert report.verdict is Verdict.VALID, report.to_json()

    # Read on two processes, in blocks of a few lines: the same report, the leaves made in the workers.
    monkeypatch.setattr(bundle_scan, "_BLOCK_BYTES", 1500)
    monkeypatch.setattr(bundle_scan, "_POOL_AFTER_BLOCKS", 1)
    bundle = tmp_path / "bundle.jsonl"
    bundle.write_text("".join(lines_of(documents)))
    with bundle.open("rb") as stream:
        on_two = verify_bundle_stream(stream, keys=books.key_ring, processes=2)
    assert on_two.to_json() == report.to_json()
    dropped = [d for d in documents if not (d["type"] == LOG_LEAF and d["index"] == 5)]
    bundle.write_text("".join(lines_of(dropped)))
    with bundle.open("rb") as stream:
        on_two = verify_bundle_stream(stream, keys=books.key_ring, processes=2)
    assert on_two.to_json() == verify_bundle(lines_of(dropped), keys=books.key_ring).to_json()
    assert on_two.verdict is Verdict.INVALID


def test_the_log_extends_the_previous_bundles_checkpoint(
    verify_cli: VerifyCli,
    client: TestClient,
    sessions: sessionmaker[Session],
    runtime: Runtime,
    tmp_path: Path,
) -> None:
    books = _logged_books(client, sessions, runtime, games=3)
    previous = tmp_path / "previous.jsonl"
    previous.write_text("".join(books.bundle()))
    size = records(previous.read_text().splitlines())[2]["checkpoint"].split("\n")[1]
    _play_one(books)
    _play_one(books)
    assert sequence_all(runtime.aio, _signer(runtime)) == 2
    bundle = tmp_path / "bundle.jsonl"
    bundle.write_text("".join(books.bundle(log_since=size)))
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps(books.key_ring.to_json()))
    result = verify_cli(
        "audit", "verify", str(bundle), "--keys", str(keys), "--previous-checkpoint", str(previous)
    )
    assert result.exit_code == 0, result.output
    assert "VALID" in result.output

    # A previous checkpoint of the same size and another root: the two bundles show two histories.
    forked = tmp_path / "forked.txt"
    note = records(previous.read_text().splitlines())[2]["checkpoint"]
    forked.write_text(
        _resigned(note, runtime, lambda c: Checkpoint(c.origin, c.size, bytes(32), c.extensions))
    )
    result = verify_cli(
        "audit", "verify", str(bundle), "--keys", str(keys), "--previous-checkpoint", str(forked)
    )
    assert result.exit_code == 1, result.output
    assert "is not the one given" in result.output

    # The same size and root, but ledger lines ahead of the carried ones: a second checkpoint of one size,
    # another statement of the books that go with the tree (it was accepted: only size and root compared).
    ahead = tmp_path / "ahead.txt"
    ahead.write_text(_resigned(note, runtime, _books_ahead))
    result = verify_cli(
        "audit", "verify", str(bundle), "--keys", str(keys), "--previous-checkpoint", str(ahead)
    )
    assert result.exit_code == 1, result.output
    assert "is not the one given" in result.output

    answer = books.api.get("/v1/audit/bundle", log_since=99)  # a size the log never signed
    assert answer.status_code == 404, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    answer = books.api.get("/v1/audit/bundle", chain=0, log_since=1)
    assert answer.status_code == 422, answer.text
    assert answer.json()["invalid_params"][0]["name"] == "query.log_since"
