"""What a beacon-mode proof must show beyond a default one: its chain is a public beacon the verifier trusts,
every roll's round was published by that chain (BLS signature, randomness), and each round is the first one
published after the action that drew the roll was accepted, so nobody could know the roll before.

Pure; pokna_verify.fairness.verification runs these as the `beacon` check and recomputes faces with `roll_faces`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pokna_verify.fairness.beacon import (
    BEACON_PROTOCOL,
    BeaconChain,
    BeaconError,
    BeaconRound,
    FairnessMode,
    beacon_roll,
    chain_problem,
    first_round_after_ms,
    format_timestamp_ms,
    parse_timestamp_ms,
    round_problem,
    round_published_at_ms,
)
from pokna_verify.fairness.proof import Proof, RecordedRoll
from pokna_verify.fairness.protocol import PROTOCOL, faces


def is_beacon_proof(proof: Proof) -> bool:
    """A proof that says anything of beacons is judged as one, so a half-edited mode cannot skip the check."""
    return (
        proof.protocol == BEACON_PROTOCOL
        or proof.fairness_mode != FairnessMode.STAKE
        or proof.beacon_chain is not None
        or any(recorded.beacon is not None or recorded.accepted_at is not None for recorded in proof.rolls)
    )


def mode_problems(proof: Proof) -> list[str]:
    """The protocol, the mode and the chain must agree: each protocol name has exactly one roll function."""
    if not is_beacon_proof(proof):
        if proof.protocol == PROTOCOL:
            return []
        return [
            f"protocol is {proof.protocol!r}, this verifier knows only {PROTOCOL!r} and {BEACON_PROTOCOL!r}"
        ]
    problems = []
    if proof.protocol != BEACON_PROTOCOL:
        problems.append(f"protocol is {proof.protocol!r}, a beacon-mode proof's is {BEACON_PROTOCOL!r}")
    if proof.fairness_mode != FairnessMode.BEACON:
        problems.append(f"fairness_mode is {proof.fairness_mode!r}, a beacon-mode proof's is 'beacon'")
    if proof.beacon_chain is None:
        problems.append("beacon_chain is missing")
    return problems


def beacon_problems(proof: Proof, trusted: Sequence[BeaconChain]) -> list[str]:
    """Every problem of the proof's chain and rounds, each naming the roll (by nonce) it concerns."""
    chain = proof.beacon_chain
    if chain is None:
        return ["beacon_chain is missing: no round can be checked"]
    problem = chain_problem(chain)
    if problem is not None:
        return [f"beacon_chain: {problem}"]
    problems = []
    if chain not in trusted:
        known = ", ".join(f"{known.chain_hash[:16]}… (key {known.public_key[:16]}…)" for known in trusted)
        problems.append(
            f"beacon_chain {chain.chain_hash} with public key {chain.public_key[:16]}… is not a public beacon "
            f"this verifier trusts ({known or 'none'}): whoever holds its key could have chosen every round"
        )
    verified: dict[BeaconRound, str | None] = {}  # one pairing per distinct round, however many rolls use it
    for recorded in proof.rolls:
        label = f"roll nonce {recorded.nonce}"
        if recorded.beacon is None or recorded.accepted_at is None:
            problems.append(f"{label}: no beacon round or no acceptance time recorded")
            continue
        if recorded.beacon not in verified:
            verified[recorded.beacon] = round_problem(chain, recorded.beacon)
        round_number = recorded.beacon.round
        if verified[recorded.beacon] is not None:
            problems.append(f"{label}: round {round_number}: {verified[recorded.beacon]}")
            continue
        problems.extend(_timing_problems(label, chain, recorded.accepted_at, round_number))
    return problems


def _timing_problems(label: str, chain: BeaconChain, accepted_at: str, round_number: int) -> list[str]:
    try:
        accepted_ms = parse_timestamp_ms(accepted_at)
    except BeaconError as error:
        return [f"{label}: accepted_at: {error}"]
    published_ms = round_published_at_ms(chain, round_number)
    expected = first_round_after_ms(chain, accepted_ms)
    if published_ms <= accepted_ms:
        return [
            f"{label}: round {round_number} was published at {format_timestamp_ms(published_ms)}, not after "
            f"the action was accepted at {accepted_at}: it was known before the roll was drawn"
        ]
    if round_number != expected:
        return [
            f"{label}: round {round_number} is not the first round published after the acceptance at "
            f"{accepted_at} (that is round {expected})"
        ]
    return []


def roll_faces(proof: Proof) -> dict[int, int | None]:
    """Each non-negative nonce's computed face; None where a beacon-mode roll names no usable round."""
    nonces = [recorded.nonce for recorded in proof.rolls if recorded.nonce >= 0]
    if not is_beacon_proof(proof):
        return dict(zip(nonces, faces(proof.server_seed, proof.client_seed, nonces), strict=True))
    return {recorded.nonce: _beacon_face(proof, recorded) for recorded in proof.rolls if recorded.nonce >= 0}


def _beacon_face(proof: Proof, recorded: RecordedRoll) -> int | None:
    if recorded.beacon is None:
        return None
    return beacon_roll(proof.server_seed, proof.client_seed, recorded.nonce, recorded.beacon.randomness).face
