"""Any single-field change to a proof fails verification, naming the check that caught it.

Two adversaries: someone who edits a published proof (the signature catches them), and the operator itself,
who can re-sign anything (the recomputations, the receipt and the rules replay must catch it).
"""

from __future__ import annotations

from typing import Any

import pytest
from fairness_samples import (
    KEY_RING,
    NEW_KEY,
    Path,
    altered,
    get_at,
    leaf_paths,
    sample_proof,
    sample_receipt,
    with_leaf,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from pokna_verify.crypto.canonical_json import canonicalize
from pokna_verify.crypto.signing import sign_document
from pokna_verify.fairness.errors import MalformedProofError
from pokna_verify.fairness.proof import Proof
from pokna_verify.fairness.verification import verify_proof

SAMPLE = sample_proof()
LEAVES = list(leaf_paths(SAMPLE))
RECEIPT = sample_receipt()


def lookup_table_replay() -> Any:
    """Stands in for the rules engine: the sample's inputs map to its outcome; any other input is unknown."""
    original = Proof.from_json(SAMPLE)

    def inputs(proof: Proof) -> bytes:
        return canonicalize(
            [proof.game.to_json(), list(proof.actions), [entry.to_json() for entry in proof.rolls]]
        )

    def replay(proof: Proof) -> str | None:
        if inputs(proof) != inputs(original):
            return "these actions and rolls are not the sample game"
        if dict(proof.outcome) != dict(original.outcome):
            return "outcome differs from the replay"
        if proof.transfers != original.transfers:
            return "transfers differ from the replay"
        return None

    return replay


REPLAY = lookup_table_replay()


def expected_checks(path: Path) -> set[str]:
    """The check that must catch an operator who changes this field and re-signs."""
    head = path[0]
    last = path[-1]
    if head in ("protocol", "document"):
        return {"protocol"}
    if head in ("server_seed", "server_seed_hash"):
        return {"commitment"}
    if head == "client_seed":
        return {"client_seed"}
    if head == "client_seeds":
        return (
            {"client_seed_format"}
            if last == "source"
            else {"client_seed"}
            if last == "client_seed"
            else {"seats"}
        )
    if head == "rolls":
        return {"nonces"} if last == "nonce" else {"seats"} if last in ("seat", "account_id") else {"rolls"}
    if head == "game" and path[1] == "seats":
        return {"seats"}
    if head == "game_id":
        return {"receipt"}
    if head == "game":
        return {"receipt", "replay"}
    return {"replay"}  # actions, outcome, transfers


def test_every_leaf_is_covered() -> None:
    assert len(LEAVES) > 60
    assert ("transfers", 3, "payer") in LEAVES
    assert ("actions", 1, "balances", "1") in LEAVES


def test_the_untampered_sample_passes_everything() -> None:
    report = verify_proof(SAMPLE, KEY_RING, replay=REPLAY, receipt=RECEIPT)
    assert not report.failed
    assert not report.not_run


@pytest.mark.parametrize("path", LEAVES, ids=lambda path: ".".join(map(str, path)))
def test_editing_any_field_breaks_the_signature(path: Path) -> None:
    tampered = with_leaf(SAMPLE, path, altered(get_at(SAMPLE, path)))
    try:
        report = verify_proof(tampered, KEY_RING)
    except MalformedProofError:
        return  # e.g. payer "pot" -> "poa": no longer a proof at all, which is also a refusal
    assert not report.valid
    assert "signature" in {check.name for check in report.failed}


@pytest.mark.parametrize(
    "path",
    [path for path in LEAVES if path[0] not in ("key_id", "signature")],
    ids=lambda path: ".".join(map(str, path)),
)
def test_the_operator_re_signing_a_changed_field_is_still_caught(path: Path) -> None:
    forged = sign_document(with_leaf(SAMPLE, path, altered(get_at(SAMPLE, path))), NEW_KEY)
    if get_at(SAMPLE, path) == "pot":  # "pot" -> "poa" is no party at all: refused as malformed
        with pytest.raises(MalformedProofError, match=str(path[-1])):
            verify_proof(forged, KEY_RING, replay=REPLAY, receipt=RECEIPT)
        return
    report = verify_proof(forged, KEY_RING, replay=REPLAY, receipt=RECEIPT)
    failed = {check.name for check in report.failed}
    assert expected_checks(path) <= failed, (path, report.to_json())
    assert "signature" not in failed


@pytest.mark.parametrize("path", [("key_id",), ("signature",)])
def test_key_id_and_signature_edits_fail_the_signature(path: Path) -> None:
    report = verify_proof(with_leaf(SAMPLE, path, altered(get_at(SAMPLE, path))), KEY_RING)
    assert [check.name for check in report.failed] == ["signature"]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_same_type_replacement_of_any_leaf_is_refused(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(LEAVES))
    original = get_at(SAMPLE, path)
    if isinstance(original, bool):
        replacement: object = not original
    elif isinstance(original, int):
        replacement = data.draw(
            st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1).filter(lambda v: v != original)
        )
    else:
        replacement = data.draw(st.text(max_size=70).filter(lambda v: v != original))
    try:
        report = verify_proof(with_leaf(SAMPLE, path, replacement), KEY_RING)
    except MalformedProofError:
        return
    assert "signature" in {check.name for check in report.failed}
