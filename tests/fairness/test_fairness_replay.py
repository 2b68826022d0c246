"""The replay check: the outcome and every transfer must follow from the proof's actions and rolls."""

from __future__ import annotations

import copy
from typing import Any

from fairness_samples import sample_proof

from pokna.fairness.proof import Proof
from pokna.fairness.proof_replay import balance_cap, recorded_balances, replay_proof


def _replayed(edit: Any = None) -> str | None:
    document = copy.deepcopy(sample_proof())
    if edit is not None:
        edit(document)
    return replay_proof(Proof.from_json(document))


def test_a_played_game_replays() -> None:
    assert _replayed() is None


def test_a_claim_recorded_instead_of_the_challenge_is_caught() -> None:
    def claim_instead(document: dict[str, Any]) -> None:
        document["actions"][3]["action"] = "claim"

    message = _replayed(claim_instead)
    assert message is not None
    assert "transfer" in message or "roll" in message or "action" in message


def test_an_inflated_payout_is_caught_naming_the_transfer() -> None:
    def inflate(document: dict[str, Any]) -> None:
        document["transfers"][-1]["amount"] += 1

    message = _replayed(inflate)
    assert message is not None
    assert message.startswith("transfer 4:")


def test_a_missing_last_action_leaves_the_game_unfinished() -> None:
    def drop_last(document: dict[str, Any]) -> None:
        document["actions"].pop()

    message = _replayed(drop_last)
    assert message is not None
    assert "draw" in message or "still in phase" in message


def test_a_vigo_too_poor_for_the_raise_changes_the_outcome() -> None:
    def impoverish_vigo(document: dict[str, Any]) -> None:
        for action in document["actions"]:
            action["balances"]["0"] = 0

    assert _replayed(impoverish_vigo) is not None


def test_outcome_edits_are_caught() -> None:
    def edit_outcome(document: dict[str, Any]) -> None:
        document["outcome"]["reason"] = "claimed"

    message = _replayed(edit_outcome)
    assert message is not None
    assert message.startswith("outcome:")


def test_recorded_balances_are_capped_at_what_one_step_can_spend() -> None:
    cap = balance_cap(stake=10, challenge_raise=5, player_count=3)
    assert cap == 35
    assert recorded_balances({0: 1_000_000, 1: 7, 2: -3}, cap) == {"0": 35, "1": 7, "2": 0}
