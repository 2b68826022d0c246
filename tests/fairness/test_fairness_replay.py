"""The replay check: the outcome and every transfer must follow from the proof's actions and rolls."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from fairness_samples import (
    CLIENT_SEEDS,
    NEW_KEY,
    TERMS,
    _play_sample_game,
    altered,
    get_at,
    leaf_paths,
    sample_proof,
    with_leaf,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from pokna_verify.fairness.errors import MalformedProofError
from pokna_verify.fairness.proof import Proof, RecordedRoll, build_proof
from pokna_verify.fairness.proof_replay import (
    StepMemo,
    balance_cap,
    recorded_balances,
    replay_proof,
)
from pokna_verify.game import GameState, step
from pokna_verify.game.actions import Action
from pokna_verify.game.engine import RollFace, StepResult


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


def readable_step(
    state: GameState,
    action: Action,
    balances: dict[int, int],
    faces: Mapping[int, RecordedRoll],
    roll_face: RollFace,
) -> StepResult:
    """The rules as they are, every time (what the memo must equal)."""
    return step(state, action, balances=balances, roll_face=roll_face)


def _both_ways(document: dict[str, Any], memo: StepMemo) -> str | None:
    try:
        proof = Proof.from_json(document)
    except MalformedProofError:  # a party renamed past "pot": refused before any replay
        return "malformed"
    readable = replay_proof(proof, readable_step)
    assert replay_proof(proof, memo.step) == readable
    return readable


def test_the_step_memo_replays_every_altered_field_exactly_as_the_rules() -> None:
    """Every single-field change of a played game's proof, replayed through a memo that already holds the
    game's own steps (so the changed game's unchanged steps are found there): the same verdict, to the
    word, as the rules run afresh."""
    document = sample_proof()
    memo = StepMemo()
    assert _both_ways(document, memo) is None
    paths = [path for path in leaf_paths(document) if path[0] in {"game", "rolls", "actions", "transfers"}]
    assert len(paths) > 50
    verdicts = {
        _both_ways(with_leaf(document, path, altered(get_at(document, path))), memo) for path in paths
    }
    assert len(verdicts) > 10  # the changes are caught, in many different words


@settings(max_examples=40, deadline=None)
@given(st.binary(min_size=32, max_size=32).map(bytes.hex), st.data())
def test_the_step_memo_replays_random_games_exactly_as_the_rules(
    server_seed: str, data: st.DataObject
) -> None:
    rolls, actions, outcome, transfers = _play_sample_game(server_seed)
    document = build_proof(
        game_id="game-memo",
        server_seed=server_seed,
        client_seeds=CLIENT_SEEDS,
        terms=TERMS,
        rolls=rolls,
        actions=actions,
        outcome=outcome,
        transfers=transfers,
        private_key=NEW_KEY,
    )
    assert _both_ways(document, _shared) is None
    path = data.draw(st.sampled_from([p for p in leaf_paths(document) if p[0] in {"rolls", "actions"}]))
    _both_ways(with_leaf(document, path, altered(get_at(document, path))), _shared)


def test_a_step_that_draws_no_roll_it_was_keyed_on_is_not_kept() -> None:
    memo = StepMemo(size=4)
    document = sample_proof()
    _both_ways(document, memo)
    assert 0 < len(memo._results) <= 4


_shared = StepMemo()  # across the examples, as in a bundle: later games find earlier games' steps
