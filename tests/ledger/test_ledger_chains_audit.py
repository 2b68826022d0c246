"""The offline verifier on a journal of several hash chains: each chain's links checked on their own, in
any interleaving, findings naming `chain k seq N`, checkpoints pinning every chain's head, and the process
pool stitching blocks per chain. Exports are built here without a database, as the format contract says
an export is written."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pokna_verify.crypto.signing import generate_signing_key, sign_document
from pokna_verify.ledger import scan as audit_scan
from pokna_verify.ledger.chain import (
    GENESIS_HASH,
    LEDGER_CHAINS,
    document_hash,
    format_timestamp,
    transaction_document,
)
from pokna_verify.ledger.check import (
    CHECKPOINT_TYPE,
    AuditReport,
    UnusableCheckpoint,
    shape_problem,
    verify_export,
)
from pokna_verify.ledger.scan import verify_export_stream

TENANT = "ten_chains"
WALLETS = [f"acct_{index:032x}" for index in range(6)]
SIGNER = generate_signing_key()
MOMENT = datetime(2026, 3, 1, tzinfo=UTC)

Line = dict[str, Any]


def _chain(chain: int, count: int, *, start: int = 1, with_chain_field: bool = True) -> list[Line]:
    """Lines `start`..`start + count - 1` of one chain: transfers among WALLETS shared by every chain. A
    chain starting after seq 1 follows a made-up hash (an export from a seq onwards)."""
    prev_hash = GENESIS_HASH if start == 1 else f"{chain:02x}" * 32
    lines = []
    for seq in range(start, start + count):
        payer, payee = WALLETS[(seq + chain) % 6], WALLETS[(seq * 5 + chain + 1) % 6]
        amount = (seq * 7 + chain) % 50 + 1
        document = transaction_document(
            chain=chain,
            seq=seq,
            prev_hash=prev_hash,
            tenant_id=TENANT,
            transaction_id=f"txn_{chain:02d}{seq:030x}",
            kind="ante",
            reference=None if seq % 3 else f"game-{chain}-{seq}",
            metadata={} if seq % 4 else {"round": seq, "chain": chain},
            created_at=format_timestamp(MOMENT + timedelta(milliseconds=seq * LEDGER_CHAINS + chain)),
            postings=[(payer, -amount, "CREDIT"), (payee, amount, "CREDIT")],
        )
        prev_hash = document_hash(document)
        line = {**document, "hash": prev_hash}
        if with_chain_field:
            line["chain"] = chain
        lines.append(line)
    return lines


def _in_chain_order(counts: dict[int, int]) -> list[Line]:
    """As the service exports: by chain, then seq."""
    return [line for chain, count in sorted(counts.items()) for line in _chain(chain, count)]


def _round_robin(chains: list[list[Line]]) -> list[Line]:
    """One line of each chain in turn: every chain ascends, no two neighbours are on the same chain."""
    merged: list[Line] = []
    for index in range(max(map(len, chains))):
        merged.extend(lines[index] for lines in chains if index < len(lines))
    return merged


def _text(lines: list[Line]) -> list[str]:
    return [(line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines]


def _verify(lines: list[Line], **options: Any) -> AuditReport:
    return verify_export(_text(lines), **options)


def _where(lines: list[Line], chain: int, seq: int) -> int:
    return next(i for i, line in enumerate(lines) if line.get("chain", 0) == chain and line["seq"] == seq)


def _label(line: Line) -> str:
    return f"seq {line['seq']}" if line["chain"] == 0 else f"chain {line['chain']} seq {line['seq']}"


def _problems(report: AuditReport) -> set[str]:
    return {finding.problem for finding in report.findings}


COUNTS = {0: 5, 3: 7, 11: 4}


# --- valid exports ----------------------------------------------------------------------------------------


def _expected_balances(lines: list[Line]) -> dict[str, int]:
    balances: dict[str, int] = {}
    for line in lines:
        for posting in line["postings"]:
            balances[posting["account_id"]] = balances.get(posting["account_id"], 0) + posting["amount"]
    return balances


def test_a_three_chain_export_in_chain_order_is_valid_and_summarized_per_chain() -> None:
    lines = _in_chain_order(COUNTS)
    report = _verify(lines)
    assert report.valid, report.findings
    assert (report.transactions, report.postings) == (16, 32)
    last = {chain: _chain(chain, count)[-1]["hash"] for chain, count in COUNTS.items()}
    assert {
        chain: (s.first_seq, s.last_seq, s.transactions, s.head_hash) for chain, s in report.chains.items()
    } == {
        0: (1, 5, 5, last[0]),
        3: (1, 7, 7, last[3]),
        11: (1, 4, 4, last[11]),
    }
    # first_seq/last_seq/head_hash stay chain 0's
    assert (report.first_seq, report.last_seq, report.head_hash) == (1, 5, last[0])
    document = report.to_json()
    assert [entry["chain"] for entry in document["chains"]] == [0, 3, 11]
    assert document["chains"][1] == {
        "chain": 3,
        "first_seq": 1,
        "last_seq": 7,
        "head_hash": last[3],
        "transactions": 7,
    }
    # The balances add up every chain's postings to the same accounts, and the books balance over all.
    assert report.balances == _expected_balances(lines)
    assert (
        len(
            {posting["account_id"] for line in _chain(3, 7) for posting in line["postings"]}
            & set(_expected_balances(_chain(11, 4)))
        )
        > 0
    )
    assert report.trial_balance() == {"CREDIT": 0}


@settings(max_examples=40, deadline=None)
@given(st.permutations([chain for chain, count in COUNTS.items() for _ in range(count)]))
def test_any_interleaving_that_keeps_each_chain_in_order_verifies_the_same(order: list[int]) -> None:
    pending = {chain: _chain(chain, count) for chain, count in COUNTS.items()}
    interleaved = [pending[chain].pop(0) for chain in order]
    report = _verify(interleaved)
    assert report.valid, report.findings
    assert report.to_json() == _verify(_in_chain_order(COUNTS)).to_json()


def test_an_export_from_before_chains_verifies_as_it_did() -> None:
    old = _chain(0, 6, with_chain_field=False)
    assert all("chain" not in line for line in old)
    report = _verify(old)
    assert report.valid
    assert (report.first_seq, report.last_seq, report.head_hash) == (1, 6, old[-1]["hash"])
    assert list(report.chains) == [0]
    # The same transactions exported today carry "chain": 0, which their hash does not cover.
    assert _verify(_chain(0, 6)).to_json() == report.to_json()
    tampered = [*old[:2], {**old[2], "kind": "payout"}, *old[3:]]
    assert _problems(_verify(tampered)) == {"seq 3: hash does not match its contents (the line was edited)"}
    assert [finding.chain for finding in _verify(tampered).findings] == [0]


def test_a_chain_starting_mid_way_takes_its_prev_hash_on_trust_with_a_note_naming_it() -> None:
    lines = _round_robin([_chain(0, 4), _chain(3, 4, start=20)])
    report = _verify(lines)
    assert report.valid, report.findings
    assert (report.chains[3].first_seq, report.chains[3].last_seq) == (20, 23)
    [note] = report.notes
    assert "chain 3 starts at seq 20" in note


# --- tampering on chain 3 -----------------------------------------------------------------------------------


def _export() -> list[Line]:
    return _round_robin([_chain(0, 6), _chain(3, 8), _chain(5, 6)])


def _edited_amount(lines: list[Line]) -> list[Line]:
    lines = json.loads(json.dumps(lines))
    lines[_where(lines, 3, 4)]["postings"][1]["amount"] += 1
    return lines


def _dropped(lines: list[Line]) -> list[Line]:
    index = _where(lines, 3, 4)
    return lines[:index] + lines[index + 1 :]


def _swapped(lines: list[Line]) -> list[Line]:
    first, second = _where(lines, 3, 4), _where(lines, 3, 5)
    swapped = list(lines)
    swapped[first], swapped[second] = lines[second], lines[first]
    return swapped


def _moved_to_chain_5(lines: list[Line]) -> list[Line]:
    index = _where(lines, 3, 4)
    return [*lines[:index], {**lines[index], "chain": 5}, *lines[index + 1 :]]


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        pytest.param(
            _edited_amount,
            {
                "chain 3 seq 4: hash does not match its contents (the line was edited)",
                "chain 3 seq 4 does not balance: off by 1 CREDIT",
                "trial balance is off by 1 CREDIT",
            },
            id="edited-amount",
        ),
        pytest.param(
            _dropped,
            {
                "chain 3 seq 4 missing before chain 3 seq 5 (dropped or reordered)",
                "chain 3 seq 5: prev_hash does not match the hash of the line before on its chain (chain 3 seq 3)",
            },
            id="dropped",
        ),
        pytest.param(
            _swapped,
            {
                "chain 3 seq 4 missing before chain 3 seq 5 (dropped or reordered)",
                "chain 3 seq 5: prev_hash does not match the hash of the line before on its chain (chain 3 seq 3)",
                "chain 3 seq 4 appears after chain 3 seq 5 (reordered, duplicated or inserted)",
                "chain 3 seq 5 missing before chain 3 seq 6 (dropped or reordered)",
                "chain 3 seq 4: prev_hash does not match the hash of the line before on its chain (chain 3 seq 5)",
                "chain 3 seq 6: prev_hash does not match the hash of the line before on its chain (chain 3 seq 4)",
            },
            id="swapped",
        ),
        pytest.param(
            _moved_to_chain_5,
            {
                # the moved line, on chain 5 after its seq 3: linked to chain 3's seq 3, hashed on chain 3
                "chain 5 seq 4: prev_hash does not match the hash of the line before on its chain (chain 5 seq 3)",
                "chain 5 seq 4: hash does not match its contents (the line was edited)",
                # chain 5's own seq 4 then comes twice
                "chain 5 seq 4 appears after chain 5 seq 4 (reordered, duplicated or inserted)",
                "chain 5 seq 4: prev_hash does not match the hash of the line before on its chain (chain 5 seq 4)",
                "chain 3 seq 4 missing before chain 3 seq 5 (dropped or reordered)",
                "chain 3 seq 5: prev_hash does not match the hash of the line before on its chain (chain 3 seq 3)",
            },
            id="moved-to-another-chain",
        ),
    ],
)
def test_tampering_on_chain_3_is_named_by_its_chain_and_seq(
    tamper: Callable[[list[Line]], list[Line]], expected: set[str]
) -> None:
    report = _verify(tamper(_export()))
    assert _problems(report) == expected
    assert any(finding.chain == 3 and finding.seq == 4 for finding in report.findings)
    assert {finding.chain for finding in report.findings if finding.line is not None} <= {3, 5}


def test_tampering_on_chain_0_of_a_multi_chain_export_keeps_the_old_wording() -> None:
    lines = _export()
    index = _where(lines, 0, 2)
    report = _verify([*lines[:index], *lines[index + 1 :]])
    assert _problems(report) == {
        "seq 2 missing before seq 3 (dropped or reordered)",
        "seq 3: prev_hash does not match the hash of the line before (seq 1)",
    }
    assert report.findings[0].to_json()["chain"] == 0


@pytest.mark.parametrize("value", [16, -1, True, "3", 2.0, None, LEDGER_CHAINS + 100])
def test_a_chain_that_is_not_an_integer_from_0_to_15_is_a_malformed_line(value: object) -> None:
    lines = _export()
    index = _where(lines, 3, 2)
    lines[index] = {**lines[index], "chain": value}
    report = _verify(lines)
    malformed = [finding for finding in report.findings if "is malformed" in finding.problem]
    assert len(malformed) == 1
    assert malformed[0].line == index + 1
    assert malformed[0].problem.endswith("is malformed: chain is not an integer from 0 to 15")
    assert shape_problem(lines[index]) == "chain is not an integer from 0 to 15"


def test_chains_0_and_15_are_well_formed() -> None:
    assert shape_problem(_chain(15, 1)[0]) is None
    assert shape_problem(_chain(0, 1)[0]) is None
    assert _verify(_round_robin([_chain(0, 2), _chain(15, 3)])).valid


# --- checkpoints with heads -----------------------------------------------------------------------------------


def _checkpoint(
    heads: list[Any] | None, *, seq: int | None = None, hash_: str | None = None
) -> dict[str, Any]:
    head_0 = next((head for head in heads or [] if isinstance(head, dict) and head.get("chain") == 0), None)
    document: dict[str, Any] = {
        "type": CHECKPOINT_TYPE,
        "tenant_id": TENANT,
        "seq": seq if seq is not None else (head_0["seq"] if head_0 else 0),
        "hash": hash_ if hash_ is not None else (head_0["hash"] if head_0 else GENESIS_HASH),
        "created_at": format_timestamp(MOMENT + timedelta(days=1)),
    }
    if heads is not None:
        document["heads"] = heads
    return sign_document(document, SIGNER)


def _head(chain: int, seq: int) -> dict[str, Any]:
    return {"chain": chain, "seq": seq, "hash": _chain(chain, seq)[-1]["hash"]}


def _pinned(lines: list[Line], checkpoint: dict[str, Any]) -> AuditReport:
    return _verify(lines, checkpoint=checkpoint, public_key=SIGNER.public_key())


def _rechain(lines: list[Line], chain: int, from_seq: int, change: Callable[[Line], object]) -> list[Line]:
    """A forger's consistent rewrite of one chain from `from_seq` on: every link and hash recomputed."""
    rewritten: list[Line] = []
    prev_hash: str | None = None
    for original in lines:
        line = json.loads(json.dumps(original))
        if line.get("chain", 0) == chain and line["seq"] >= from_seq:
            if line["seq"] > from_seq:
                line["prev_hash"] = prev_hash
            change(line)
            line["hash"] = document_hash(line)
        if line.get("chain", 0) == chain:
            prev_hash = line["hash"]
        rewritten.append(line)
    return rewritten


def _bump_first_amount(line: Line) -> None:
    line["postings"][0]["amount"] -= 1
    line["postings"][1]["amount"] += 1


def test_a_checkpoint_with_heads_pins_every_chain() -> None:
    lines = _export()
    checkpoint = _checkpoint([_head(0, 4), _head(3, 8), _head(5, 2)])
    report = _pinned(lines, checkpoint)
    assert report.valid, report.findings
    assert report.checkpoint_checked


def test_a_rewritten_chain_passes_its_links_but_not_the_head_the_checkpoint_pins() -> None:
    rewritten = _rechain(_export(), 3, 2, _bump_first_amount)
    assert _verify(rewritten).valid  # only the checkpoint can tell
    report = _pinned(rewritten, _checkpoint([_head(0, 4), _head(3, 6), _head(5, 2)]))
    assert _problems(report) == {
        "chain 3 seq 6: the hash differs from the signed checkpoint (history rewritten)"
    }
    assert [(finding.chain, finding.seq, finding.line) for finding in report.findings] == [(3, 6, None)]
    # A checkpoint from before chains pins chain 0 only: the same rewrite passes it.
    old = _checkpoint(None, seq=4, hash_=_head(0, 4)["hash"])
    assert _pinned(rewritten, old).valid


def test_a_chain_ending_before_its_pinned_head_is_missing_its_tail() -> None:
    lines = _export()
    cut = [line for line in lines if not (line["chain"] == 5 and line["seq"] > 3)]
    report = _pinned(cut, _checkpoint([_head(0, 4), _head(3, 8), _head(5, 6)]))
    assert _problems(report) == {
        "the signed checkpoint covers chain 5 seq 6 but the export's chain 5 ends at seq 3 "
        "(transactions missing from the end)"
    }
    without_chain_5 = [line for line in lines if line["chain"] != 5]
    report = _pinned(without_chain_5, _checkpoint([_head(0, 4), _head(5, 1)]))
    assert _problems(report) == {
        "the signed checkpoint covers chain 5 seq 1 but the export's chain 5 ends at seq 0 "
        "(transactions missing from the end)"
    }
    # Chain 0 keeps today's wording.
    short_0 = [line for line in lines if not (line["chain"] == 0 and line["seq"] > 2)]
    report = _pinned(short_0, _checkpoint([_head(0, 4), _head(3, 8)]))
    assert _problems(report) == {
        "the signed checkpoint covers seq 4 but the export ends at seq 2 (transactions missing from the end)"
    }


def test_an_export_starting_after_a_pinned_head_does_not_contain_it() -> None:
    lines = [line for line in _export() if not (line["chain"] == 3 and line["seq"] < 4)]
    report = _pinned(lines, _checkpoint([_head(3, 2)]))
    assert "the export does not contain the checkpoint's chain 3 seq 2" in _problems(report)


def test_a_checkpoint_before_chain_0_had_a_transaction_pins_the_other_chains() -> None:
    lines = _round_robin([_chain(3, 8), _chain(5, 6)])
    assert _pinned(lines, _checkpoint([_head(3, 7), _head(5, 6)])).valid
    assert not _pinned(
        _rechain(lines, 5, 6, _bump_first_amount), _checkpoint([_head(3, 7), _head(5, 6)])
    ).valid


def test_the_signature_covers_the_heads() -> None:
    checkpoint = _checkpoint([_head(0, 4), _head(3, 8)])
    checkpoint["heads"][1] = _head(3, 7)
    report = _pinned(_export(), checkpoint)
    assert any(finding.problem.startswith("checkpoint signature:") for finding in report.findings)


@pytest.mark.parametrize(
    "checkpoint",
    [
        pytest.param(
            lambda: _checkpoint(None, seq=4, hash_=_head(0, 4)["hash"]) | {"heads": {"3": 8}}, id="not-a-list"
        ),
        pytest.param(lambda: _checkpoint([_head(0, 4), [3, 8, "ab"]]), id="head-not-an-object"),
        pytest.param(lambda: _checkpoint([_head(0, 4), {"chain": 3, "seq": 8}]), id="head-without-hash"),
        pytest.param(lambda: _checkpoint([_head(0, 4), {**_head(3, 8), "chain": 16}]), id="chain-16"),
        pytest.param(lambda: _checkpoint([_head(0, 4), {**_head(3, 8), "chain": -1}]), id="chain-negative"),
        pytest.param(lambda: _checkpoint([{**_head(1, 4), "chain": True}]), id="chain-bool"),
        pytest.param(lambda: _checkpoint([_head(0, 4), _head(3, 8), _head(3, 8)]), id="chain-repeated"),
        pytest.param(lambda: _checkpoint([_head(0, 4), _head(5, 2), _head(3, 8)]), id="chains-out-of-order"),
        pytest.param(lambda: _checkpoint([_head(0, 4), {**_head(3, 8), "seq": 0}]), id="seq-0"),
        pytest.param(lambda: _checkpoint([_head(0, 4), {**_head(3, 8), "seq": "8"}]), id="seq-text"),
        pytest.param(lambda: _checkpoint([_head(0, 4), _head(3, 8)], seq=5), id="chain-0-disagrees-seq"),
        pytest.param(
            lambda: _checkpoint([_head(0, 4), _head(3, 8)], hash_=_head(0, 3)["hash"]),
            id="chain-0-disagrees-hash",
        ),
        pytest.param(
            lambda: _checkpoint([_head(3, 8)], seq=4, hash_=_head(0, 4)["hash"]), id="chain-0-head-not-listed"
        ),
    ],
)
def test_malformed_heads_make_the_checkpoint_unusable(checkpoint: Callable[[], dict[str, Any]]) -> None:
    with pytest.raises(UnusableCheckpoint):
        _pinned(_export(), checkpoint())


# --- the process pool ---------------------------------------------------------------------------------------


POOL_COUNTS = {0: 150, 3: 220, 9: 130}


def _pool_export(interleaved: bool) -> list[Line]:
    chains = [_chain(chain, count) for chain, count in sorted(POOL_COUNTS.items())]
    return _round_robin(chains) if interleaved else [line for lines in chains for line in lines]


def _block_starts(lines: list[Line]) -> list[tuple[int, int]]:
    """(chain, seq) of each block's first line, as audit_scan cuts the export."""
    data = "".join(_text(lines)).encode()
    starts = []
    for block in audit_scan.whole_line_blocks(io.BytesIO(data)):
        first = json.loads(block.split(b"\n", 1)[0])
        starts.append((first["chain"], first["seq"]))
    return starts


def _pool_reports(data: bytes, tmp_path: Path, **options: Any) -> list[AuditReport]:
    export_file = tmp_path / "export.jsonl"
    export_file.write_bytes(data)
    with export_file.open("rb") as handle:
        reports = [
            verify_export_stream(io.BytesIO(data), processes=2, **options),
            verify_export_stream(handle, processes=2, **options),
        ]
    for report in reports:
        assert report.processes == 2
    return reports


def _seam_inside_chain_3(lines: list[Line]) -> tuple[int, int]:
    """A block that starts on chain 3 after its seq 1: the seam is between two lines of chain 3 (in chain
    order) or between chain 3's lines of two blocks (interleaved)."""
    return next((chain, seq) for chain, seq in _block_starts(lines)[2:] if chain == 3 and seq > 1)


def _tamper_at_seam(kind: str, lines: list[Line]) -> list[Line]:
    chain, seq = _seam_inside_chain_3(lines)
    assert 1 < seq < 200  # before the head the checkpoint pins on chain 3
    if kind == "untouched":
        return lines
    if kind == "edited":
        lines = json.loads(json.dumps(lines))
        lines[_where(lines, chain, seq)]["kind"] = "payout"
        return lines
    if kind == "relinked":  # self-consistent from the seam on: only the check across the seam sees it
        return _rechain(
            lines, chain, seq, lambda line: line.update(prev_hash="ab" * 32) if line["seq"] == seq else None
        )
    if kind == "dropped-at-seam":
        index = _where(lines, chain, seq)
        return lines[:index] + lines[index + 1 :]
    if kind == "garbage-before-seam":  # not JSON: named by the line it follows, the last of a worker's block
        index = _where(lines, chain, seq)
        return [*lines[:index], "{not json", *lines[index:]]  # type: ignore[list-item]
    if kind == "rewritten":  # a consistent rewrite of chain 3's tail: a checkpoint's head catches it
        return _rechain(lines, chain, seq, _bump_first_amount)
    raise AssertionError(kind)


@pytest.mark.parametrize("interleaved", [False, True], ids=["chain-order", "interleaved"])
@pytest.mark.parametrize(
    "kind", ["untouched", "edited", "relinked", "dropped-at-seam", "garbage-before-seam", "rewritten"]
)
def test_the_pool_reports_exactly_what_the_line_by_line_verification_reports_per_chain(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, interleaved: bool, kind: str
) -> None:
    monkeypatch.setattr(audit_scan, "_BLOCK_BYTES", 8 * 1024)  # ~15 lines a block: many seams per chain
    original = _pool_export(interleaved)
    blocks = len(_block_starts(original))
    assert blocks > 2 * audit_scan._POOL_AFTER_BLOCKS
    tampered = _tamper_at_seam(kind, original)
    data = "".join(_text(tampered)).encode()
    checkpoint = _checkpoint([_head(0, 150), _head(3, 200), _head(9, 100)])
    for pinned in (None, checkpoint):
        options: dict[str, Any] = {"checkpoint": pinned, "public_key": SIGNER.public_key()} if pinned else {}
        expected = verify_export(io.BytesIO(data), **options)
        for report in _pool_reports(data, tmp_path, **options):
            assert report.to_json() == expected.to_json()
            assert report.findings == expected.findings
            if kind in ("untouched", "rewritten"):  # every block and every seam passes on its own
                assert report.blocks_from_workers == blocks
            else:
                assert 0 < report.blocks_from_workers < blocks
        chain, seq = _seam_inside_chain_3(original)
        if kind == "untouched" or (kind == "rewritten" and pinned is None):
            assert expected.valid, expected.findings
        else:
            assert expected.findings
            if kind == "garbage-before-seam":
                [finding] = expected.findings
                before = original[_where(original, chain, seq) - 1]
                assert finding.seq is None
                assert f"({'after ' + _label(before)}) is not JSON" in finding.problem
                continue
            assert {finding.chain for finding in expected.findings} == {chain}
            named = {finding.seq for finding in expected.findings}
            if kind == "rewritten":
                assert named == {200}
            elif kind == "relinked":
                assert named == ({seq, 200} if pinned else {seq})
            elif kind == "dropped-at-seam":
                assert named == {seq, seq + 1}
            else:
                assert named == {seq}
    assert expected.chains.keys() == POOL_COUNTS.keys()
