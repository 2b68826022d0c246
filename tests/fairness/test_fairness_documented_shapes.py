"""The typed answer models of the signed documents and of a game's events give back exactly what they are
given (issue 26): the proof, the commitment receipt and the public link, once validated by their documented
models and written out as an answer, canonicalize to the same bytes (so every signature still verifies);
fields a later version added (rake terms, seat labels) stay absent when they were absent, and fields the
models do not know are kept. Every event the rules record fits its documented `data`, unchanged."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from fairness_samples import sample_proof
from test_fairness_browser_replay import _decide, play_random_game

from pokna.dealer.link_log import EXAMPLE_LOGGED
from pokna.dealer.schemas import CommitmentReceiptOut, FairnessLinkOut, GameEventOut, SignedProofOut
from pokna_verify.crypto.canonical_json import canonicalize
from pokna_verify.game import GameConfig, new_game, step
from pokna_verify.game.actions import action_to_dict

GAMES = range(0, 1000, 7)
NOT_LOGGED = {"status": "pending", "log_url": "/v1/logs/tnt_0c1d2e3f"}
LOGGED = EXAMPLE_LOGGED


def _answered(model: Any, document: dict[str, Any]) -> bytes:
    return canonicalize(model.model_validate(document).model_dump(mode="json"))


@pytest.mark.parametrize("index", GAMES)
def test_signed_documents_come_out_as_they_went_in(index: int) -> None:
    link = {**play_random_game(index).link, "public_log": LOGGED if index % 2 else NOT_LOGGED}
    assert _answered(SignedProofOut, link["proof"]) == canonicalize(link["proof"])
    assert _answered(CommitmentReceiptOut, link["commitment"]) == canonicalize(link["commitment"])
    assert _answered(FairnessLinkOut, link) == canonicalize(link)
    pending = {**link, "status": "in_progress", "revealed": False, "proof": None}
    del pending["public_log"]  # only a finished game has a place in the public log
    assert _answered(FairnessLinkOut, pending) == canonicalize(pending)


def test_absent_terms_stay_absent_and_unknown_fields_stay() -> None:
    proof = copy.deepcopy(sample_proof())
    assert "rake_bps" not in proof["game"]
    assert "label" not in proof["game"]["seats"][0]
    proof["from_a_later_version"] = {"kept": True}
    proof["game"]["seats"][1]["label"] = "Leia"
    proof["game"]["seats"][1]["handedness"] = "left"
    proof["rolls"][0]["note"] = None
    written = SignedProofOut.model_validate(proof).model_dump(mode="json")
    assert canonicalize(written) == canonicalize(proof)
    assert "rake_bps" not in written["game"]
    assert "label" not in written["game"]["seats"][0]


def test_a_link_whose_revealed_and_proof_disagree_is_no_documented_link() -> None:
    link = play_random_game(0).link
    with pytest.raises(ValueError, match="proof"):
        FairnessLinkOut.model_validate({**link, "revealed": False})


@pytest.mark.parametrize("index", range(60))
def test_every_recorded_rules_event_fits_its_documented_data(index: int) -> None:
    rng = random.Random(f"documented-events-{index}")
    config = GameConfig.create(stake=5, challenge_raise=rng.choice((1, 5, 11)), player_count=index % 6 + 1)
    state = new_game(config)
    balances = dict.fromkeys(config.seats, 1_000)
    seq = 0
    while not state.is_over:
        action = _decide(state, rng, 0.5)
        result = step(state, action, balances=balances, roll_face=lambda _nonce: rng.randint(1, 6))
        records = [("action", action_to_dict(action) | {"balances": {"0": 1}})]
        records += [(event.kind.value, event.to_dict()) for event in result.events]
        for kind, data in records:
            seq += 1
            event = {"seq": seq, "kind": kind, "data": data, "occurred_at": "2026-12-01T12:00:00.5Z"}
            written = GameEventOut.model_validate(event).model_dump(mode="json")
            assert written["data"] == data
            assert canonicalize(written["data"]) == canonicalize(data)
        state = result.state
