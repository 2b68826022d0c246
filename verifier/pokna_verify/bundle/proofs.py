"""Every game's proof read once and checked as pokna_verify.fairness checks it (commitment, client seeds, rolls,
signature, rules replay). Pure: the bundle scanner (pokna_verify.bundle.scan) runs it wherever the game's
record was read, in this process or in a worker, and sends back only what the money check needs of the
proof and the verdict, never the proof itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pokna_verify.bundle.play_facts import PlayFacts, play_facts
from pokna_verify.fairness.beacon import KNOWN_CHAINS, BeaconChain
from pokna_verify.fairness.errors import FairnessError, MalformedProofError
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.fairness.plain_json import plain_signed_bytes
from pokna_verify.fairness.proof import Proof, TransferRecord
from pokna_verify.fairness.proof_replay import replay_proof
from pokna_verify.fairness.verification import CheckStatus, verify_parsed_proof


@dataclass(frozen=True, slots=True)
class ProofFacts:
    """What the money check (pokna_verify.bundle.money) needs of a parsed proof, and what a period's report
    (pokna_verify.bundle.play_tally) needs of it."""

    game_id: str
    reason: object  # the outcome's reason, whatever the proof holds there
    seats: tuple[tuple[int, str], ...]  # (seat, account_id) as the signed game terms name them
    transfers: tuple[TransferRecord, ...]
    play: PlayFacts


@dataclass(frozen=True, slots=True)
class GameProof:
    """A game record's proof, read and checked: its facts (or why it is malformed), each failed check as
    "name: what failed", and the number of rolls recomputed."""

    facts: ProofFacts | None
    malformed: str | None
    problems: tuple[str, ...]
    rolls: int
    # The public log's leaf hash this proof makes for a finished game (pokna_verify.bundle.public_log).
    log_leaf: bytes | None = None


def read_game_proof(
    document: object,
    keys: KeyRing | None,
    *,
    plain: bool = False,
    beacon_chains: Sequence[BeaconChain] = KNOWN_CHAINS,
) -> GameProof | None:
    """None when the record holds no proof object (the journal says what is wrong with that). `plain`:
    the proof was read from text pokna_verify.fairness.plain_json found plain. `beacon_chains`: the drand chains a
    beacon-mode proof may name (quicknet, and any the auditor chose to trust)."""
    if not isinstance(document, dict):
        return None
    try:
        proof = Proof.from_json(document)
    except MalformedProofError as error:
        return GameProof(None, str(error), (), 0)
    facts = ProofFacts(
        proof.game_id,
        proof.outcome.get("reason"),
        tuple((seat.seat, seat.account_id) for seat in proof.game.seats),
        proof.transfers,
        play_facts(proof.game, proof.rolls, proof.actions, proof.outcome, proof.transfers),
    )
    signed = plain_signed_bytes(document) if plain else None
    try:
        report = verify_parsed_proof(
            proof, keys, replay=replay_proof, signed=signed, beacon_chains=beacon_chains
        )
    except (FairnessError, ValueError, TypeError) as error:
        return GameProof(facts, None, (f"not a proof: {error}",), 0)
    problems = [f"{check.name}: {check.message}" for check in report.failed]
    if keys is None:
        problems.append("signature: no key ring to check it with")
    rolls = len(proof.rolls) if report.check("rolls").status is CheckStatus.PASS else 0
    return GameProof(facts, None, tuple(problems), rolls)
