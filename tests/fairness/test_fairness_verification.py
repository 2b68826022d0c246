"""The verifier on a sound proof, and the exact words it uses when something is off."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fairness_samples import (
    CHECK_SERVER_SEED,
    CHECK_SERVER_SEED_HASH,
    CHECKS,
    CLIENT_SEEDS,
    GAME_ID,
    KEY_RING,
    NEW_KEY,
    STRANGER_KEY,
    TERMS,
    sample_proof,
    sample_receipt,
)

from pokna_verify.crypto.signing import sign_document
from pokna_verify.fairness.errors import InvalidClientSeedError, MalformedProofError
from pokna_verify.fairness.proof import Proof, SeatClientSeed, build_proof
from pokna_verify.fairness.protocol import game_client_seed, roll
from pokna_verify.fairness.verification import CheckStatus, verify_commitment_receipt, verify_proof


def resigned(proof: dict[str, Any]) -> dict[str, Any]:
    """What a dishonest operator holding the signing key could publish."""
    return sign_document(proof, NEW_KEY)


def test_a_sound_proof_passes_every_check_that_can_run() -> None:
    report = verify_proof(sample_proof(), KEY_RING)
    assert [check.name for check in report.checks] == list(CHECKS)
    assert report.valid
    assert {check.name for check in report.not_run} == {"receipt", "replay"}
    assert all(
        check.status is CheckStatus.PASS for check in report.checks if check.name not in {"receipt", "replay"}
    )
    assert report.check("replay").message.startswith("no rules engine")


def test_with_receipt_and_replay_every_check_passes() -> None:
    report = verify_proof(sample_proof(), KEY_RING, replay=lambda proof: None, receipt=sample_receipt())
    assert all(check.status is CheckStatus.PASS for check in report.checks), report.to_json()


def test_the_proof_document_shape() -> None:
    proof = sample_proof()
    assert list(proof) == [
        "protocol",
        "document",
        "game_id",
        "server_seed",
        "server_seed_hash",
        "client_seeds",
        "client_seed",
        "game",
        "rolls",
        "actions",
        "outcome",
        "transfers",
        "key_id",
        "signature",
    ]
    assert proof["protocol"] == "pokna-hmac-sha256-v1"
    assert proof["server_seed_hash"] == CHECK_SERVER_SEED_HASH
    assert proof["client_seed"] == game_client_seed([entry.client_seed for entry in CLIENT_SEEDS])
    assert proof["client_seeds"][2] == {
        "seat": 2,
        "account_id": "acct-bob",
        "client_seed": "Srv_generated-0001",
        "source": "server",
    }
    first = proof["rolls"][0]
    assert first == {
        "nonce": 0,
        "seat": 0,
        "account_id": "acct-vigo",
        "purpose": "favor",
        "face": roll(CHECK_SERVER_SEED, proof["client_seed"], 0).face,
        "color": first["color"],
    }
    # The sample's rolls: favor red; seat 1 blue (out), seat 2 red (alone); seat 2 challenges, the Vigo
    # rolls blue and seat 2 matches it. So seat 2 takes both antes, the raise and its match.
    stake, challenge_raise = TERMS.stake, TERMS.challenge_raise
    assert proof["transfers"][-1] == {
        "kind": "payout",
        "payer": "pot",
        "payee": 2,
        "amount": 2 * stake + 2 * challenge_raise,
    }
    assert proof["outcome"]["reason"] == "challenge_won"
    assert Proof.from_json(proof).game == TERMS


def test_builder_orders_client_seeds_by_seat_and_validates_them() -> None:
    kwargs: dict[str, Any] = {
        "game_id": GAME_ID,
        "server_seed": CHECK_SERVER_SEED,
        "terms": TERMS,
        "rolls": [],
        "actions": [],
        "outcome": {"status": "voided"},
        "transfers": [],
        "private_key": NEW_KEY,
    }
    proof = build_proof(client_seeds=list(reversed(CLIENT_SEEDS)), **kwargs)
    assert [entry["seat"] for entry in proof["client_seeds"]] == [0, 1, 2]
    assert verify_proof(proof, KEY_RING).valid
    assert verify_proof(proof, KEY_RING).check("nonces").message == "no rolls"
    with pytest.raises(InvalidClientSeedError):
        build_proof(client_seeds=[SeatClientSeed(0, "acct-vigo", "bad seed", "player")], **kwargs)


def test_a_wrong_face_is_named_with_both_values() -> None:
    proof = sample_proof()
    recorded = proof["rolls"][3]["face"]
    wrong = recorded % 6 + 1
    proof["rolls"][3]["face"] = wrong
    report = verify_proof(resigned(proof), KEY_RING)
    assert [check.name for check in report.failed] == ["rolls"]
    assert report.check("rolls").message == f"roll nonce 3: face {wrong} recorded, {recorded} computed"


def test_a_wrong_colour_is_named() -> None:
    proof = sample_proof()
    recorded = proof["rolls"][1]["color"]
    proof["rolls"][1]["color"] = "blue" if recorded == "red" else "red"
    report = verify_proof(resigned(proof), KEY_RING)
    assert (
        report.check("rolls").message
        == f"roll nonce 1: colour {proof['rolls'][1]['color']} recorded, {recorded} computed"
    )


def test_a_missing_roll_is_a_nonce_gap() -> None:
    proof = sample_proof()
    del proof["rolls"][2]
    report = verify_proof(resigned(proof), KEY_RING)
    assert "nonces" in [check.name for check in report.failed]
    assert report.check("nonces").message == "roll 2 has nonce 3, expected 2; roll 3 has nonce 4, expected 3"


def test_a_repeated_roll_is_a_reused_nonce() -> None:
    proof = sample_proof()
    proof["rolls"].insert(2, copy.deepcopy(proof["rolls"][1]))
    report = verify_proof(resigned(proof), KEY_RING)
    assert report.check("nonces").message.startswith("nonce 1 is used twice")


def test_the_first_roll_must_be_the_vigos_favor() -> None:
    proof = sample_proof()
    proof["rolls"][0]["purpose"] = "seek"
    report = verify_proof(resigned(proof), KEY_RING)
    assert "the first roll is the Vigo's (seat 0) favor roll" in report.check("rolls").message


def test_unknown_purpose_is_named() -> None:
    proof = sample_proof()
    proof["rolls"][1]["purpose"] = "reroll"
    assert "purpose 'reroll' is not one of" in verify_proof(resigned(proof), KEY_RING).check("rolls").message


def test_a_client_seed_swapped_after_the_fact_is_caught() -> None:
    proof = sample_proof()
    proof["client_seeds"][1]["client_seed"] = "alice.2"
    report = verify_proof(resigned(proof), KEY_RING)
    assert [check.name for check in report.failed] == ["client_seed"]


def test_a_different_seed_with_its_own_hash_is_caught_only_by_the_receipt() -> None:
    """An operator who re-hashes a new seed and re-signs fools every check except the committed receipt."""
    import hashlib

    new_seed = "ab" * 32
    proof = sample_proof()
    proof["server_seed"] = new_seed
    proof["server_seed_hash"] = hashlib.sha256(new_seed.encode()).hexdigest()
    for entry in proof["rolls"]:
        face = roll(new_seed, proof["client_seed"], entry["nonce"]).face
        entry["face"], entry["color"] = face, "red" if face <= 3 else "blue"
    forged = resigned(proof)
    assert verify_proof(forged, KEY_RING).valid
    report = verify_proof(forged, KEY_RING, receipt=sample_receipt())
    assert [check.name for check in report.failed] == ["receipt"]
    assert "receipt server_seed_hash is" in report.check("receipt").message


def test_receipt_for_another_game_or_other_terms_or_signer_fails() -> None:
    receipt = sample_receipt()
    receipt["game_id"] = "game-0002"
    receipt["game"]["stake"] = 101
    report = verify_proof(sample_proof(), KEY_RING, receipt=sign_document(receipt, NEW_KEY))
    assert "receipt game_id is 'game-0002'" in report.check("receipt").message
    assert "receipt game.stake is 101, the proof's is 100" in report.check("receipt").message
    report = verify_proof(sample_proof(), KEY_RING, receipt=sample_receipt(STRANGER_KEY))
    assert "is not in the key ring" in report.check("receipt").message


def test_receipt_without_keys_is_checked_but_says_its_signature_was_not() -> None:
    report = verify_proof(sample_proof(), None, receipt=sample_receipt())
    assert report.check("receipt").status is CheckStatus.PASS
    assert "receipt signature not checked" in report.check("receipt").message
    assert report.check("signature").status is CheckStatus.NOT_RUN


def test_commitment_receipt_verifies_on_its_own() -> None:
    receipt = sample_receipt()
    assert receipt["server_seed_hash"] == CHECK_SERVER_SEED_HASH
    assert receipt["created_at"] == "2025-01-01T12:00:00Z"
    assert "server_seed" not in receipt
    assert verify_commitment_receipt(receipt, KEY_RING).valid
    assert not verify_commitment_receipt({**receipt, "created_at": "2025-01-02T12:00:00Z"}, KEY_RING).valid
    assert not verify_commitment_receipt(resigned({**receipt, "document": "proof"}), KEY_RING).valid


def test_replay_result_is_reported() -> None:
    proof = sample_proof()
    report = verify_proof(
        proof, KEY_RING, replay=lambda parsed: "transfer 3: amount 250 recorded, 200 replayed"
    )
    assert [check.name for check in report.failed] == ["replay"]
    assert report.check("replay").message == "transfer 3: amount 250 recorded, 200 replayed"


def test_replay_gets_the_parsed_proof() -> None:
    seen: list[Proof] = []
    verify_proof(sample_proof(), KEY_RING, replay=lambda parsed: seen.append(parsed))
    assert seen[0].game_id == GAME_ID
    assert [action["action"] for action in seen[0].actions] == [
        "start",
        "roll",
        "roll",
        "challenge",
        "roll",
        "roll",
    ]


def test_a_crashing_replay_is_a_failed_check_not_a_crash() -> None:
    def crashing(parsed: Proof) -> str | None:
        raise KeyError("choice")

    report = verify_proof(sample_proof(), KEY_RING, replay=crashing)
    assert report.check("replay").message == "replay raised KeyError: 'choice'"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (("server_seed",), "$.server_seed: missing"),
        (("rolls", 1, "face"), "$.rolls[1].face: missing"),
        (("client_seeds", 0, "source"), "$.client_seeds[0].source: missing"),
        (("game", "stake"), "$.game.stake: missing"),
        (("signature",), "$.signature: missing"),
    ],
)
def test_missing_fields_are_malformed_not_invalid(path: tuple[str | int, ...], expected: str) -> None:
    proof = sample_proof()
    parent: Any = proof
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    with pytest.raises(MalformedProofError) as raised:
        verify_proof(proof, KEY_RING)
    assert str(raised.value) == expected


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("rolls", {}, "$.rolls: expected a list, got an object"),
        ("game_id", 7, "$.game_id: expected a string, got an integer"),
        ("game", [], "$.game: expected an object"),
        ("transfers", [{"kind": "x", "payer": "house", "payee": 1, "amount": 1}], "$.transfers[0].payer"),
    ],
)
def test_mistyped_fields_are_malformed(field: str, value: object, expected: str) -> None:
    proof = sample_proof()
    proof[field] = value
    with pytest.raises(MalformedProofError, match=expected.replace("$", r"\$").replace("[", r"\[")):
        verify_proof(proof, KEY_RING)


def test_booleans_are_not_integers() -> None:
    proof = sample_proof()
    proof["rolls"][0]["nonce"] = False
    with pytest.raises(MalformedProofError, match="expected an integer, got a boolean"):
        verify_proof(proof, KEY_RING)


def test_report_json_shape() -> None:
    report = verify_proof(sample_proof(), KEY_RING).to_json()
    assert report["valid"] is True
    assert report["checks"][0] == {"name": "protocol", "status": "pass", "message": "pokna-hmac-sha256-v1"}
    assert report["checks"][-1]["status"] == "not run"
