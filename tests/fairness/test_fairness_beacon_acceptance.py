"""The signed acceptance of a beacon-mode drawing action: it names the round before the round exists, and a
player's client holds it against the beacon's latest round and, later, against the proof."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from fairness_samples import NEW_KEY, sample_beacon_proof

from pokna.drand import BeaconRelays
from pokna_verify.crypto.signing import signature_problem
from pokna_verify.fairness.beacon import QUICKNET, format_timestamp_ms
from pokna_verify.fairness.beacon_acceptance import (
    acceptance_problems,
    build_roll_acceptance,
    proof_problems_against,
)
from pokna_verify.fairness.proof import Proof
from support.beacon_server import beacon_relay

# Half a period before quicknet's round 1001 was published: the sample game's second drawing action.
ACCEPTED_AT = "2023-08-23T15:59:25.500Z"


def acceptance(accepted_at: str = ACCEPTED_AT) -> dict[str, Any]:
    return build_roll_acceptance(
        game_id="game-0001",
        action={"action": "roll", "seat": 1},
        accepted_at=accepted_at,
        chain=QUICKNET,
        private_key=NEW_KEY,
    )


def test_the_acceptance_names_the_first_round_after_it_and_is_signed() -> None:
    document = acceptance()
    assert document["beacon_round"] == 1001
    assert document["round_due_at"] == "2023-08-23T15:59:27.000Z"
    assert signature_problem(document, NEW_KEY.public_key()) is None


def test_a_client_accepts_it_while_the_round_is_not_published_and_refuses_it_after() -> None:
    assert acceptance_problems(acceptance(), QUICKNET, latest_round=1000) == []
    late = acceptance_problems(acceptance(), QUICKNET, latest_round=1001)
    assert late == [
        "the beacon's latest round is 1001: round 1001 was already published, so the roll could be known when "
        "the action was accepted"
    ]


def test_a_round_that_does_not_follow_from_the_acceptance_time_is_refused() -> None:
    edited = copy.deepcopy(acceptance())
    edited["beacon_round"] = 1002
    assert acceptance_problems(edited, QUICKNET, latest_round=1000) == [
        "beacon_round is 1002, the first round after accepted_at is 1001"
    ]


def test_the_kept_acceptance_holds_the_proof_to_its_round() -> None:
    proof = Proof.from_json(sample_beacon_proof())
    assert proof_problems_against(acceptance(), proof) == []
    other_time = acceptance("2023-08-23T15:59:26.000Z")  # same round, a time no roll of the proof has
    assert proof_problems_against(other_time, proof) == [
        "the proof has no roll accepted at 2023-08-23T15:59:26.000Z: the accepted action's rolls are missing"
    ]


def test_against_a_live_relay_the_named_round_is_in_the_future() -> None:
    """As a player's client does it (docs/fairness.md 1b): the relay's latest round is noted before the
    action is sent, and the acceptance is made after; read after it, a round boundary in between (one a
    second here) would make the check depend on the clock."""
    with beacon_relay(period=1, rounds_before_now=4) as relay:
        relays = BeaconRelays(urls=[relay.url], chain=relay.chain, clock=lambda: relay.now_ms() / 1000)
        latest_before = asyncio.run(relays.latest()).round
        accepted_at = format_timestamp_ms(relays.now_ms())
        document = build_roll_acceptance(
            game_id="g",
            action={"action": "start", "seat": 0},
            accepted_at=accepted_at,
            chain=relay.chain,
            private_key=NEW_KEY,
        )
        assert acceptance_problems(document, relay.chain, latest_before) == []
        relay.advance(1.0)
        assert acceptance_problems(document, relay.chain, asyncio.run(relays.latest()).round) != []
