"""Beacon-mode proofs: the sample game on real quicknet rounds verifies in the Python verifier, the CLI and the
audit checker; every tamper fails naming the roll; default-mode proofs are untouched."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fairness_samples import (
    CHECKS,
    KEY_RING,
    NEW_KEY,
    QUICKNET_ROUNDS,
    sample_beacon_proof,
    sample_beacon_receipt,
    sample_proof,
    sample_receipt,
)

from pokna_verify.bundle.proofs import read_game_proof
from pokna_verify.crypto.signing import sign_document
from pokna_verify.fairness.beacon import BEACON_PROTOCOL, QUICKNET, BeaconRound
from pokna_verify.fairness.proof_replay import replay_proof
from pokna_verify.fairness.verification import CheckStatus, VerificationReport, verify_proof
from support.beacon_server import BeaconKey
from support.verify_cli import VerifyCli

BEACON_CHECKS = (*CHECKS[:7], "beacon", *CHECKS[7:])


def report_of(proof: dict[str, Any], **kwargs: Any) -> VerificationReport:
    return verify_proof(proof, KEY_RING, replay_proof, sample_beacon_receipt(), **kwargs)


def resigned(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The sample with one edit, signed again by the operator's key: only the beacon evidence can catch it."""
    proof = copy.deepcopy(sample_beacon_proof())
    del proof["signature"], proof["key_id"]
    edit(proof)
    return sign_document(proof, NEW_KEY)


def test_a_beacon_proof_on_real_quicknet_rounds_verifies() -> None:
    proof = sample_beacon_proof()
    report = report_of(proof)
    assert report.valid, report.to_json()
    assert [check.name for check in report.checks] == list(BEACON_CHECKS)
    assert all(check.status is CheckStatus.PASS for check in report.checks)
    assert proof["protocol"] == BEACON_PROTOCOL
    assert proof["fairness_mode"] == "beacon"
    assert proof["beacon_chain"] == QUICKNET.to_json()
    assert [roll["beacon"]["round"] for roll in proof["rolls"]] == [1000, 1001, 1002]


def test_default_mode_proofs_and_reports_are_unchanged() -> None:
    proof = sample_proof()
    assert not {"fairness_mode", "beacon_chain"} & proof.keys()
    assert all(
        roll.keys() == {"nonce", "seat", "account_id", "purpose", "face", "color"} for roll in proof["rolls"]
    )
    report = verify_proof(proof, KEY_RING, replay_proof, sample_receipt())
    assert report.valid
    assert [check.name for check in report.checks] == list(CHECKS)


def _swap_round(proof: dict[str, Any]) -> None:
    proof["rolls"][1]["beacon"] = QUICKNET_ROUNDS[1005].to_json()


def _edit_randomness(proof: dict[str, Any]) -> None:
    proof["rolls"][1]["beacon"]["randomness"] = QUICKNET_ROUNDS[1007].randomness


def _edit_signature(proof: dict[str, Any]) -> None:
    proof["rolls"][2]["beacon"]["signature"] = QUICKNET_ROUNDS[1008].signature


def _earlier_round(proof: dict[str, Any]) -> None:
    # Roll 2 claims acceptance 1.5 s after its round was published: its randomness was already public.
    proof["rolls"][2]["accepted_at"] = "2023-08-23T15:59:31.500Z"


def _edit_round_number(proof: dict[str, Any]) -> None:
    proof["rolls"][0]["beacon"]["round"] = 1001


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (_swap_round, "roll nonce 1: round 1005 is not the first round published after the acceptance"),
        (_edit_randomness, "roll nonce 1: round 1001: randomness is"),
        (_edit_signature, "roll nonce 2: round 1002: the BLS signature does not verify for round 1002"),
        (_earlier_round, "roll nonce 2: round 1002 was published at 2023-08-23T15:59:30.000Z, not after"),
        (_edit_round_number, "roll nonce 0: round 1001: the BLS signature does not verify for round 1001"),
    ],
    ids=[
        "round swapped",
        "randomness edited",
        "signature edited",
        "round before acceptance",
        "round renumbered",
    ],
)
def test_each_tamper_fails_the_beacon_check_naming_the_roll(
    edit: Callable[[dict[str, Any]], None], expected: str
) -> None:
    report = report_of(resigned(edit))
    assert not report.valid
    beacon = report.check("beacon")
    assert beacon.status is CheckStatus.FAIL
    assert expected in beacon.message
    assert report.check("signature").status is CheckStatus.PASS  # the operator's signature does not save it


def test_a_round_swapped_in_changes_the_recomputed_faces() -> None:
    """Swapping in another round's randomness moves the faces: the rolls check fails on some roll."""

    def swap_all(proof: dict[str, Any]) -> None:
        for roll in proof["rolls"]:
            roll["beacon"] = QUICKNET_ROUNDS[roll["beacon"]["round"] + 5].to_json()

    rolls = report_of(resigned(swap_all)).check("rolls")
    assert rolls.status is CheckStatus.FAIL
    assert "roll nonce" in rolls.message


def test_a_chain_the_verifier_does_not_trust_fails_even_when_every_round_verifies() -> None:
    """An operator's own BLS key: the rounds verify under it, but whoever holds it chose them."""
    key = BeaconKey()
    chain = key.chain(QUICKNET.genesis_time, QUICKNET.period)
    proof = sample_beacon_proof(chain=chain, beacon=lambda index: key.sign(1000 + index))
    receipt = sample_beacon_receipt(chain=chain)
    untrusted = verify_proof(proof, KEY_RING, replay_proof, receipt)
    assert "is not a public beacon this verifier trusts" in untrusted.check("beacon").message
    assert verify_proof(proof, KEY_RING, replay_proof, receipt, beacon_chains=(chain,)).valid


def test_a_roll_without_its_round_fails_naming_it() -> None:
    def strip(proof: dict[str, Any]) -> None:
        del proof["rolls"][1]["beacon"]

    report = report_of(resigned(strip))
    assert "roll nonce 1: no beacon round or no acceptance time recorded" in report.check("beacon").message
    assert "roll nonce 1: cannot recompute: no beacon round recorded" in report.check("rolls").message


def test_a_beacon_proof_that_drops_its_mode_fails_the_protocol_check() -> None:
    def drop_mode(proof: dict[str, Any]) -> None:
        del proof["fairness_mode"]
        proof["protocol"] = "pokna-hmac-sha256-v1"

    report = report_of(resigned(drop_mode))
    assert not report.valid
    assert "fairness_mode is 'stake', a beacon-mode proof's is 'beacon'" in report.check("protocol").message
    assert report.check("beacon").status is CheckStatus.PASS  # its rolls carry rounds: still judged as beacon


def test_the_receipt_commits_to_the_mode() -> None:
    report = verify_proof(sample_beacon_proof(), KEY_RING, replay_proof, sample_receipt())
    message = report.check("receipt").message
    assert "receipt protocol is 'pokna-hmac-sha256-v1'" in message
    assert "receipt fairness_mode is 'stake', the proof's is 'beacon'" in message


def test_the_audit_checker_checks_beacon_proofs() -> None:
    good = read_game_proof(sample_beacon_proof(), KEY_RING)
    assert good is not None
    assert (good.problems, good.rolls) == ((), 3)
    bad = read_game_proof(resigned(_edit_randomness), KEY_RING)
    assert bad is not None
    assert any(
        problem.startswith("beacon: roll nonce 1: round 1001: randomness is") for problem in bad.problems
    )


def test_pokna_verify_checks_beacon_proofs(verify_cli: VerifyCli, tmp_path: Path) -> None:
    keys, receipt = tmp_path / "keys.json", tmp_path / "receipt.json"
    keys.write_text(json.dumps(KEY_RING.to_json()))
    receipt.write_text(json.dumps(sample_beacon_receipt()))
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(sample_beacon_proof()))
    bad.write_text(json.dumps(resigned(_swap_round)))
    passed = verify_cli("verify", str(good), "--keys", str(keys), "--receipt", str(receipt), "--json")
    assert passed.exit_code == 0, passed.output
    checks = {check["name"]: check["status"] for check in json.loads(passed.output)["checks"]}
    assert checks["beacon"] == "pass"
    failed = verify_cli("verify", str(bad), "--keys", str(keys), "--receipt", str(receipt))
    assert failed.exit_code != 0
    assert "roll nonce 1: round 1005 is not the first round published after the acceptance" in failed.output


def test_fixture_rounds_are_what_the_sample_uses() -> None:
    proof = sample_beacon_proof()
    for roll in proof["rolls"]:
        assert BeaconRound(**roll["beacon"]) == QUICKNET_ROUNDS[roll["beacon"]["round"]]


def test_pokna_verify_trusts_another_beacon_chain_only_when_told(
    verify_cli: VerifyCli, tmp_path: Path
) -> None:
    key = BeaconKey()
    chain = key.chain(QUICKNET.genesis_time, QUICKNET.period)
    proof = sample_beacon_proof(chain=chain, beacon=lambda index: key.sign(1000 + index))
    files = {
        "proof.json": proof,
        "receipt.json": sample_beacon_receipt(chain=chain),
        "keys.json": KEY_RING.to_json(),
        "info.json": {  # drand's /info, v1 spelling, as the test relay serves it
            "public_key": chain.public_key,
            "period": chain.period,
            "genesis_time": chain.genesis_time,
            "hash": chain.chain_hash,
            "schemeID": chain.scheme,
        },
    }
    for name, document in files.items():
        (tmp_path / name).write_text(json.dumps(document))
    args = ["verify", str(tmp_path / "proof.json"), "--keys", str(tmp_path / "keys.json")]
    args += ["--receipt", str(tmp_path / "receipt.json")]
    refused = verify_cli(*args)
    assert refused.exit_code == 1, refused.output
    assert "is not a public beacon this verifier trusts" in refused.output
    trusted = verify_cli(*args, "--beacon-chain", str(tmp_path / "info.json"))
    assert trusted.exit_code == 0, trusted.output
    assert f"also trusted (--beacon-chain): chain {chain.chain_hash}" in trusted.output
