"""The signed acceptance of a drawing action in the beacon mode: the round its rolls will use, named before
that round exists.

The service signs it when it accepts the action (and commits the acceptance before it waits for the round),
and hands it to the player in the action's answer. The player's client checks two things at once
(`acceptance_problems`): the named round follows from the acceptance time (the first round published after
it), and the beacon's latest round, which the client reads from any drand relay, is still before it. Kept,
the acceptance is the player's evidence of a roll the operator would not resolve, and of the round that roll
must use once it does (`proof_problems_against`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pokna_verify.crypto.signing import sign_document
from pokna_verify.fairness.beacon import (
    BEACON_PROTOCOL,
    BeaconChain,
    BeaconError,
    first_round_after_ms,
    format_timestamp_ms,
    parse_timestamp_ms,
    round_published_at_ms,
)
from pokna_verify.fairness.proof import Proof

ACCEPTANCE_DOCUMENT = "roll_acceptance"


def build_roll_acceptance(
    *,
    game_id: str,
    action: Mapping[str, Any],
    accepted_at: str,
    chain: BeaconChain,
    private_key: Ed25519PrivateKey,
) -> dict[str, Any]:
    """`accepted_at` (YYYY-MM-DDTHH:MM:SS.mmmZ) is passed in: this package reads no clock. The round is
    derived here from it, so the two cannot disagree."""
    named = first_round_after_ms(chain, parse_timestamp_ms(accepted_at))
    document = {
        "protocol": BEACON_PROTOCOL,
        "document": ACCEPTANCE_DOCUMENT,
        "game_id": game_id,
        "action": dict(action),
        "accepted_at": accepted_at,
        "beacon_round": named,
        "round_due_at": format_timestamp_ms(round_published_at_ms(chain, named)),
        "chain_hash": chain.chain_hash,
    }
    return sign_document(document, private_key)


def acceptance_problems(acceptance: Mapping[str, Any], chain: BeaconChain, latest_round: int) -> list[str]:
    """What a player's client checks on the answer, given the beacon's latest round as a relay serves it now.
    (The acceptance's Ed25519 signature is checked like any signed document's, against the key ring.)"""
    problems = []
    if acceptance.get("document") != ACCEPTANCE_DOCUMENT or acceptance.get("protocol") != BEACON_PROTOCOL:
        problems.append(f"not a {ACCEPTANCE_DOCUMENT} of {BEACON_PROTOCOL}")
    if acceptance.get("chain_hash") != chain.chain_hash:
        problems.append(
            f"chain_hash is {acceptance.get('chain_hash')!r}, the beacon's is {chain.chain_hash!r}"
        )
    named = acceptance.get("beacon_round")
    try:
        expected = first_round_after_ms(chain, parse_timestamp_ms(str(acceptance.get("accepted_at"))))
    except BeaconError as error:
        return [*problems, f"accepted_at: {error}"]
    if named != expected:
        problems.append(f"beacon_round is {named!r}, the first round after accepted_at is {expected}")
    if isinstance(named, int) and latest_round >= named:
        problems.append(
            f"the beacon's latest round is {latest_round}: round {named} was already published, so the roll "
            "could be known when the action was accepted"
        )
    return problems


def proof_problems_against(acceptance: Mapping[str, Any], proof: Proof) -> list[str]:
    """The rolls a kept acceptance announced, as the revealed proof records them: every roll of the proof
    accepted at that time must use the named round, and there must be at least one."""
    accepted_at = acceptance.get("accepted_at")
    rolls = [recorded for recorded in proof.rolls if recorded.accepted_at == accepted_at]
    if not rolls:
        return [f"the proof has no roll accepted at {accepted_at}: the accepted action's rolls are missing"]
    return [
        f"roll nonce {recorded.nonce}: uses round {recorded.beacon.round if recorded.beacon else None}, "
        f"the acceptance named round {acceptance.get('beacon_round')}"
        for recorded in rolls
        if recorded.beacon is None or recorded.beacon.round != acceptance.get("beacon_round")
    ]
