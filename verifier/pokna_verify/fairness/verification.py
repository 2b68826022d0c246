"""Checking a proof without trusting the operator: every claim in it is recomputed, one named check each.

Each check reports what exactly failed ("roll nonce 3: face 5 recorded, 2 computed") so a player can tell a
forged roll from a forged signature. Game rules live elsewhere; their replay is plugged in as a callable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from pokna_verify.crypto.signing import key_id_of, signature_problem
from pokna_verify.fairness.beacon import BEACON_PROTOCOL, KNOWN_CHAINS, BeaconChain, FairnessMode
from pokna_verify.fairness.beacon_proof import beacon_problems, is_beacon_proof, mode_problems, roll_faces
from pokna_verify.fairness.keyring import KeyRing, KeyStatus
from pokna_verify.fairness.proof import PROOF_DOCUMENT, Proof, RollPurpose, SeedSource
from pokna_verify.fairness.protocol import (
    CLIENT_SEED_SEPARATOR,
    PROTOCOL,
    client_seed_problem,
    is_server_seed,
    is_sha256_hex,
)
from pokna_verify.fairness.receipt import RECEIPT_DOCUMENT
from pokna_verify.fairness.terms import VIGO_SEAT, rake_terms_of
from pokna_verify.game.cube import color_of

# Given the parsed proof, a replay returns None when the rules reproduce its outcome and transfers from its
# actions and rolls, or a sentence naming the first difference.
Replay = Callable[[Proof], str | None]
Keys = KeyRing | Ed25519PublicKey


class CheckStatus(StrEnum):
    PASS = "pass"  # noqa: S105 (a verdict, not a password)
    FAIL = "fail"
    NOT_RUN = "not run"


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    status: CheckStatus
    message: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": str(self.status), "message": self.message}


@dataclass(frozen=True, slots=True)
class VerificationReport:
    checks: tuple[CheckResult, ...]

    @property
    def valid(self) -> bool:
        """No check failed. Checks that could not run (no key, no rules engine) are listed, not fatal."""
        return not self.failed

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(check for check in self.checks if check.status is CheckStatus.FAIL)

    @property
    def not_run(self) -> tuple[CheckResult, ...]:
        return tuple(check for check in self.checks if check.status is CheckStatus.NOT_RUN)

    def check(self, name: str) -> CheckResult:
        return next(check for check in self.checks if check.name == name)

    def to_json(self) -> dict[str, Any]:
        return {"valid": self.valid, "checks": [check.to_json() for check in self.checks]}


def _result(name: str, problems: list[str], success: str) -> CheckResult:
    if problems:
        return CheckResult(name, CheckStatus.FAIL, "; ".join(problems))
    return CheckResult(name, CheckStatus.PASS, success)


def verify_proof(
    proof: Mapping[str, Any],
    keys: Keys | None,
    replay: Replay | None = None,
    receipt: Mapping[str, Any] | None = None,
    beacon_chains: Sequence[BeaconChain] = KNOWN_CHAINS,
) -> VerificationReport:
    """Raises MalformedProofError if `proof` is not shaped like a proof; otherwise every check runs.

    `receipt`, when the player kept the commitment receipt from game creation, ties the revealed seed to the
    commitment made before play; without it the report says so. `beacon_chains`: the public beacons a
    beacon-mode proof may name (drand's quicknet unless the caller trusts another, as tests do).
    """
    return verify_parsed_proof(Proof.from_json(proof), keys, replay, receipt, beacon_chains=beacon_chains)


def verify_parsed_proof(
    parsed: Proof,
    keys: Keys | None,
    replay: Replay | None = None,
    receipt: Mapping[str, Any] | None = None,
    signed: bytes | None = None,
    beacon_chains: Sequence[BeaconChain] = KNOWN_CHAINS,
) -> VerificationReport:
    """verify_proof of a proof already parsed (an auditor's tool reads each proof once). `signed`: the
    bytes its signature covers, when the caller has them (pokna_verify.fairness.plain_json). A beacon-mode proof
    gets one more check, `beacon`, after `rolls`; a default-mode report is what it always was."""
    beacon = (_check_beacon(parsed, beacon_chains),) if is_beacon_proof(parsed) else ()
    return VerificationReport(
        (
            _check_protocol(parsed),
            _check_commitment(parsed),
            _check_client_seed_format(parsed),
            _check_client_seed(parsed),
            _check_seats(parsed),
            _check_nonces(parsed),
            _check_rolls(parsed),
            *beacon,
            _check_signature(parsed.document, parsed.key_id, keys, signed),
            _check_receipt(parsed, receipt, keys),
            _check_replay(parsed, replay),
        )
    )


def _check_protocol(proof: Proof) -> CheckResult:
    problems = mode_problems(proof)
    if proof.document_type != PROOF_DOCUMENT:
        problems.append(f"document is {proof.document_type!r}, not {PROOF_DOCUMENT!r}")
    return _result("protocol", problems, proof.protocol)


def _check_beacon(proof: Proof, trusted: Sequence[BeaconChain]) -> CheckResult:
    chain = proof.beacon_chain
    rounds = len({recorded.beacon for recorded in proof.rolls if recorded.beacon is not None})
    success = (
        f"{rounds} drand rounds of chain {chain.chain_hash[:16]}… verify (BLS), each published after the "
        f"action that drew its rolls was accepted"
        if chain is not None
        else ""
    )
    return _result("beacon", beacon_problems(proof, trusted), success)


def _check_commitment(proof: Proof) -> CheckResult:
    if not is_server_seed(proof.server_seed):
        return _result("commitment", ["server_seed is not 64 lowercase hexadecimal characters"], "")
    computed = hashlib.sha256(proof.server_seed.encode("ascii")).hexdigest()
    if computed != proof.server_seed_hash:
        return _result(
            "commitment",
            [f"sha256(server_seed) is {computed}, server_seed_hash is {proof.server_seed_hash}"],
            "",
        )
    return _result("commitment", [], f"sha256(server_seed) = server_seed_hash = {computed}")


def _check_client_seed_format(proof: Proof) -> CheckResult:
    problems = []
    if not proof.client_seeds:
        problems.append("client_seeds is empty")
    for entry in proof.client_seeds:
        problem = client_seed_problem(entry.client_seed)
        if problem is not None:
            problems.append(f"seat {entry.seat}: {problem}")
        if entry.source not in tuple(SeedSource):
            problems.append(f"seat {entry.seat}: source is {entry.source!r}, not player or server")
    if not is_sha256_hex(proof.client_seed):
        problems.append("client_seed is not 64 lowercase hexadecimal characters")
    return _result("client_seed_format", problems, f"{len(proof.client_seeds)} client seeds well formed")


def _check_client_seed(proof: Proof) -> CheckResult:
    # Sorted by seat, so a reordered list is judged by the seats it names; the seats check covers the order.
    ordered = sorted(proof.client_seeds, key=lambda entry: entry.seat)
    joined = CLIENT_SEED_SEPARATOR.join(entry.client_seed for entry in ordered)
    computed = hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()
    if computed != proof.client_seed:
        return _result(
            "client_seed",
            [f"sha256 of the seats' client seeds is {computed}, client_seed is {proof.client_seed}"],
            "",
        )
    return _result("client_seed", [], f"client_seed = sha256 of the seats' client seeds = {computed}")


def _check_seats(proof: Proof) -> CheckResult:
    problems = []
    seat_numbers = [seat.seat for seat in proof.game.seats]
    if seat_numbers != list(range(len(seat_numbers))):
        problems.append(f"game.seats are numbered {seat_numbers}, not 0..{len(seat_numbers) - 1} in order")
    accounts = {seat.seat: seat.account_id for seat in proof.game.seats}
    seed_seats = [entry.seat for entry in proof.client_seeds]
    if seed_seats != seat_numbers:
        problems.append(f"client_seeds are for seats {seed_seats}, game.seats are {seat_numbers}")
    for entry in proof.client_seeds:
        if entry.seat in accounts and accounts[entry.seat] != entry.account_id:
            problems.append(
                f"client seed of seat {entry.seat} names account {entry.account_id}, "
                f"the seat is {accounts[entry.seat]}"
            )
    for recorded in proof.rolls:
        if recorded.seat not in accounts:
            problems.append(f"roll nonce {recorded.nonce}: seat {recorded.seat} is not in the game")
        elif accounts[recorded.seat] != recorded.account_id:
            problems.append(
                f"roll nonce {recorded.nonce}: names account {recorded.account_id}, "
                f"seat {recorded.seat} is {accounts[recorded.seat]}"
            )
    for index, transfer in enumerate(proof.transfers):
        for role, party in (("payer", transfer.payer), ("payee", transfer.payee)):
            if isinstance(party, int) and party not in accounts:
                problems.append(f"transfer {index}: {role} seat {party} is not in the game")
        if transfer.amount <= 0:
            problems.append(f"transfer {index}: amount {transfer.amount} is not positive")
    return _result("seats", problems, f"{len(seat_numbers)} seats consistent across the proof")


def _check_nonces(proof: Proof) -> CheckResult:
    problems = []
    nonces = [recorded.nonce for recorded in proof.rolls]
    seen: set[int] = set()
    for index, nonce in enumerate(nonces):
        if nonce in seen:
            problems.append(f"nonce {nonce} is used twice")
        elif nonce != index:
            problems.append(f"roll {index} has nonce {nonce}, expected {index}")
        seen.add(nonce)
    success = f"nonces 0..{len(nonces) - 1} each used once, in order" if nonces else "no rolls"
    return _result("nonces", problems, success)


def _check_rolls(proof: Proof) -> CheckResult:
    if not is_server_seed(proof.server_seed):
        return _result(
            "rolls", ["cannot recompute: server_seed is not 64 lowercase hexadecimal characters"], ""
        )
    problems = []
    computed_faces = roll_faces(proof)
    for index, recorded in enumerate(proof.rolls):
        label = f"roll nonce {recorded.nonce}"
        if recorded.nonce < 0:
            problems.append(f"{label}: a nonce is never negative")
            continue
        face = computed_faces[recorded.nonce]
        if face is None:
            problems.append(f"{label}: cannot recompute: no beacon round recorded")
            continue
        if recorded.face != face:
            problems.append(f"{label}: face {recorded.face} recorded, {face} computed")
        if recorded.color != color_of(face):
            problems.append(f"{label}: colour {recorded.color} recorded, {color_of(face)} computed")
        if recorded.purpose not in tuple(RollPurpose):
            problems.append(f"{label}: purpose {recorded.purpose!r} is not one of {', '.join(RollPurpose)}")
        if index == 0 and (recorded.purpose != RollPurpose.FAVOR or recorded.seat != VIGO_SEAT):
            problems.append(f"{label}: the first roll is the Vigo's (seat 0) favor roll")
    return _result("rolls", problems, f"{len(proof.rolls)} rolls recomputed, every face and colour matches")


def _check_signature(
    document: Mapping[str, Any], key_id: object, keys: Keys | None, signed: bytes | None = None
) -> CheckResult:
    if keys is None:
        return CheckResult("signature", CheckStatus.NOT_RUN, "no public key or key ring given")
    if isinstance(keys, KeyRing):
        published = keys.find(str(key_id))
        if published is None:
            return _result("signature", [f"key_id {key_id} is not in the key ring"], "")
        public_key, status = published.public_key, published.status
    else:
        public_key, status = keys, KeyStatus.CURRENT
        if key_id != key_id_of(keys):
            return _result(
                "signature", [f"key_id is {key_id}, the given public key is {key_id_of(keys)}"], ""
            )
    problem = signature_problem(document, public_key, payload=signed)
    retired = " (a retired key)" if status is KeyStatus.RETIRED else ""
    return _result(
        "signature", [problem] if problem else [], f"Ed25519 signature by {key_id}{retired} verifies"
    )


def _check_receipt(proof: Proof, receipt: Mapping[str, Any] | None, keys: Keys | None) -> CheckResult:
    if receipt is None:
        return CheckResult("receipt", CheckStatus.NOT_RUN, "no commitment receipt given")
    problems = []
    for field, expected in (
        ("protocol", proof.protocol),
        ("document", RECEIPT_DOCUMENT),
        ("game_id", proof.game_id),
        ("server_seed_hash", proof.server_seed_hash),
    ):
        if receipt.get(field) != expected:
            problems.append(f"receipt {field} is {receipt.get(field)!r}, expected {expected!r}")
    # The mode and the chain are committed to before play, so an operator cannot switch them afterwards.
    promised_mode = receipt.get("fairness_mode", str(FairnessMode.STAKE))
    if promised_mode != proof.fairness_mode:
        problems.append(f"receipt fairness_mode is {promised_mode!r}, the proof's is {proof.fairness_mode!r}")
    chain = proof.beacon_chain.to_json() if proof.beacon_chain is not None else None
    if receipt.get("beacon_chain") != chain:
        problems.append("receipt beacon_chain differs from the proof's")
    committed = receipt.get("game")
    # Seats may still fill up after creation, but the money terms are fixed when the commitment is made.
    for field in ("stake", "challenge_raise"):
        promised = committed.get(field) if isinstance(committed, Mapping) else None
        actual = getattr(proof.game, field)
        if promised != actual:
            problems.append(f"receipt game.{field} is {promised!r}, the proof's is {actual!r}")
    # So are the rake terms; absent ones (a receipt from before rakes) mean no rake.
    promised_rake = rake_terms_of(committed) if isinstance(committed, Mapping) else (None, None)
    for field, promised_term, actual_term in zip(
        ("rake_bps", "rake_cap"), promised_rake, (proof.game.rake_bps, proof.game.rake_cap), strict=True
    ):
        if promised_term != actual_term:
            problems.append(f"receipt game.{field} is {promised_term!r}, the proof's is {actual_term!r}")
    signature = _check_signature(receipt, receipt.get("key_id"), keys)
    if signature.status is CheckStatus.FAIL:
        problems.append(f"receipt {signature.message}")
    suffix = "" if signature.status is CheckStatus.PASS else " (receipt signature not checked: no key given)"
    return _result("receipt", problems, f"the proof reveals the seed committed to at game creation{suffix}")


def _check_replay(proof: Proof, replay: Replay | None) -> CheckResult:
    if replay is None:
        return CheckResult(
            "replay", CheckStatus.NOT_RUN, "no rules engine plugged in: outcome and transfers not replayed"
        )
    try:
        problem = replay(proof)
    except Exception as error:  # a replay that crashes on this proof fails the check, not the verifier
        return _result("replay", [f"replay raised {type(error).__name__}: {error}"], "")
    return _result(
        "replay",
        [problem] if problem else [],
        "replaying the actions and rolls reproduces outcome and transfers",
    )


def verify_commitment_receipt(receipt: Mapping[str, Any], keys: Keys | None) -> VerificationReport:
    problems = []
    if receipt.get("protocol") not in (PROTOCOL, BEACON_PROTOCOL):
        problems.append(f"protocol is {receipt.get('protocol')!r}, not {PROTOCOL!r} or {BEACON_PROTOCOL!r}")
    if receipt.get("document") != RECEIPT_DOCUMENT:
        problems.append(f"document is {receipt.get('document')!r}, not {RECEIPT_DOCUMENT!r}")
    if not is_sha256_hex(receipt.get("server_seed_hash")):
        problems.append("server_seed_hash is not 64 lowercase hexadecimal characters")
    return VerificationReport(
        (
            _result("protocol", problems, str(receipt.get("protocol"))),
            _check_signature(receipt, receipt.get("key_id"), keys),
        )
    )
