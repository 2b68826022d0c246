"""What `pokna-verify proof` (and `pokna verify`) concludes and prints: the pure verifier's report (or, before
the game ends, the checks that can run then), the verdict and its exit code, as text or JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal

from pokna_verify.cli.beacon_chains import also_trusted
from pokna_verify.cli.exit_codes import (
    EXIT_INVALID,
    EXIT_NOT_REVEALED,
    EXIT_PARTLY_VERIFIED,
    EXIT_UNUSABLE,
    EXIT_VALID,
)
from pokna_verify.cli.input_files import UnusableInputError
from pokna_verify.cli.proof_inputs import NOT_REVEALED, Evidence, Subject
from pokna_verify.cli.terminal import say
from pokna_verify.fairness.beacon import KNOWN_CHAINS
from pokna_verify.fairness.errors import MalformedProofError
from pokna_verify.fairness.proof import SeedSource
from pokna_verify.fairness.proof_replay import replay_proof
from pokna_verify.fairness.protocol import client_seed_problem
from pokna_verify.fairness.verification import (
    CheckResult,
    CheckStatus,
    VerificationReport,
    verify_commitment_receipt,
    verify_proof,
)


class Verdict(StrEnum):
    VALID = "valid"
    INVALID = "invalid"
    UNUSABLE = "unusable"
    NOT_REVEALED = "not_revealed"
    PARTLY_VERIFIED = "partly_verified"


EXIT_CODES = {
    Verdict.VALID: EXIT_VALID,
    Verdict.INVALID: EXIT_INVALID,
    Verdict.UNUSABLE: EXIT_UNUSABLE,
    Verdict.NOT_REVEALED: EXIT_NOT_REVEALED,
    Verdict.PARTLY_VERIFIED: EXIT_PARTLY_VERIFIED,
}


def revealed_report(
    kind: Literal["proof", "link", "pending"], proof: Mapping[str, Any], evidence: Evidence
) -> VerificationReport:
    try:
        report = verify_proof(
            proof, evidence.keys, replay_proof, evidence.receipt, beacon_chains=evidence.beacon_chains
        )
    except MalformedProofError as error:
        if kind == "link":
            raise UnusableInputError(f"the link's proof is malformed: {error}") from error
        raise
    return _annotated(report, evidence)


def _annotated(report: VerificationReport, evidence: Evidence) -> VerificationReport:
    """A check that did not run says why in this command's words, with what would make it run."""
    reasons = {"signature": evidence.keys_missing, "receipt": evidence.receipt_missing}
    return VerificationReport(
        tuple(
            dataclasses.replace(check, message=reasons[check.name])
            if check.status is CheckStatus.NOT_RUN and check.name in reasons
            else check
            for check in report.checks
        )
    )


def unrevealed_report(subject: Subject, evidence: Evidence) -> VerificationReport:
    """Before the reveal only the commitment and the client seeds chosen so far can be checked; every check
    of the proof is listed as not run, in the same order and with the same names as a revealed game's."""
    return VerificationReport(
        (
            CheckResult("protocol", CheckStatus.NOT_RUN, NOT_REVEALED),
            CheckResult("commitment", CheckStatus.NOT_RUN, NOT_REVEALED),
            _check_link_client_seeds(subject.client_seeds),
            CheckResult("client_seed", CheckStatus.NOT_RUN, NOT_REVEALED),
            CheckResult("seats", CheckStatus.NOT_RUN, NOT_REVEALED),
            CheckResult("nonces", CheckStatus.NOT_RUN, NOT_REVEALED),
            CheckResult("rolls", CheckStatus.NOT_RUN, NOT_REVEALED),
            CheckResult("signature", CheckStatus.NOT_RUN, NOT_REVEALED),
            _check_commitment_receipt(subject, evidence),
            CheckResult("replay", CheckStatus.NOT_RUN, NOT_REVEALED),
        )
    )


def _check_link_client_seeds(client_seeds: list[Any] | None) -> CheckResult:
    """A seat that has not chosen yet (`null`) is not a fault: the server draws one for it at the start."""
    if client_seeds is None:
        return CheckResult(
            "client_seed_format",
            CheckStatus.NOT_RUN,
            "this answer lists no client seeds (the game's public link does)",
        )
    problems = []
    chosen = 0
    for index, entry in enumerate(client_seeds):
        if not isinstance(entry, Mapping):
            problems.append(f"client_seeds[{index}] is not an object")
            continue
        seat, seed, source = entry.get("seat", index), entry.get("client_seed"), entry.get("source")
        if seed is None:
            continue
        chosen += 1
        problem = client_seed_problem(seed)
        if problem is not None:
            problems.append(f"seat {seat}: {problem}")
        if source not in tuple(SeedSource):
            problems.append(f"seat {seat}: source is {source!r}, not player or server")
    if problems:
        return CheckResult("client_seed_format", CheckStatus.FAIL, "; ".join(problems))
    return CheckResult(
        "client_seed_format",
        CheckStatus.PASS,
        f"{chosen} of {len(client_seeds)} seats have a client seed so far, each well formed",
    )


def _check_commitment_receipt(subject: Subject, evidence: Evidence) -> CheckResult:
    receipt = evidence.receipt
    if receipt is None:
        return CheckResult("receipt", CheckStatus.NOT_RUN, evidence.receipt_missing)
    checked = verify_commitment_receipt(receipt, evidence.keys)
    problems = [f"receipt {check.message}" for check in checked.failed]
    if receipt.get("game_id") != subject.game_id:
        problems.append(f"receipt game_id is {receipt.get('game_id')!r}, the game is {subject.game_id!r}")
    served = subject.served_receipt
    if (
        evidence.receipt_given
        and served is not None
        and served.get("server_seed_hash") != receipt.get("server_seed_hash")
    ):
        problems.append(
            f"the game's commitment is now {served.get('server_seed_hash')!r}, "
            f"your receipt's is {receipt.get('server_seed_hash')!r}"
        )
    if problems:
        return CheckResult("receipt", CheckStatus.FAIL, "; ".join(problems))
    signature = checked.check("signature")
    if signature.status is CheckStatus.NOT_RUN:
        return CheckResult(
            "receipt",
            CheckStatus.NOT_RUN,
            f"the receipt is well formed, but its signature was not checked: {evidence.keys_missing}",
        )
    return CheckResult("receipt", CheckStatus.PASS, f"the commitment receipt's {signature.message}")


def verdict_of(subject: Subject, report: VerificationReport) -> Verdict:
    """A failed check is INVALID even before the reveal: a forged commitment need not wait for the end. VALID
    only when every check ran: a proof whose signature or receipt went unchecked is PARTLY_VERIFIED."""
    if not report.valid:
        return Verdict.INVALID
    if not subject.revealed:
        return Verdict.NOT_REVEALED
    if report.not_run:
        return Verdict.PARTLY_VERIFIED
    return Verdict.VALID


def print_report(
    source: str,
    read_from: str,
    subject: Subject,
    evidence: Evidence,
    report: VerificationReport,
    verdict: Verdict,
) -> None:
    heading = "Proof" if subject.revealed else "Commitment"
    game_id = str(subject.proof.get("game_id")) if subject.proof is not None else subject.game_id
    say(f"{heading} of game {game_id}")
    say(f"  source   {source}: {subject.describe()}")
    if read_from != source:
        say(f"  fetched  {read_from}")
    if evidence.receipt_from is not None:
        say(f"  receipt  {evidence.receipt_from}")
    if evidence.keys_from is not None:
        say(f"  keys     {evidence.keys_from}")
    for chain in evidence.beacon_chains[len(KNOWN_CHAINS) :]:
        say(f"  beacon   {also_trusted(chain)}")
    for check in report.checks:
        say(f"  {check.status.upper():8} {check.name:19} {check.message}")
    if verdict is Verdict.INVALID:
        say(f"INVALID: failed checks: {', '.join(check.name for check in report.failed)}")
    elif verdict is Verdict.NOT_REVEALED:
        say(
            f"NOT REVEALED YET: game {subject.game_id} is {subject.status}; "
            "the server seed stays secret until it ends"
        )
        if evidence.receipt is not None:
            say(f"  server_seed_hash  {evidence.receipt.get('server_seed_hash')}")
            say(f"  committed at      {evidence.receipt.get('created_at')}")
    elif verdict is Verdict.PARTLY_VERIFIED:
        reasons = "; ".join(f"{check.name} ({check.message})" for check in report.not_run)
        say(f"PARTLY VERIFIED: nothing failed, but not every check ran: {reasons}")
    else:
        say("VALID")


def json_report(
    source: str,
    read_from: str,
    subject: Subject,
    evidence: Evidence,
    report: VerificationReport,
    verdict: Verdict,
) -> dict[str, Any]:
    """`valid` is true only when every check ran and passed, false when one failed, null otherwise."""
    document: dict[str, Any] = {
        "verdict": str(verdict),
        "valid": {Verdict.VALID: True, Verdict.INVALID: False}.get(verdict),
        "every_check_ran": not report.not_run,
        "game_id": subject.game_id if subject.proof is None else subject.proof.get("game_id"),
        "source": {"given": source, "read": read_from, "kind": subject.kind, "status": subject.status},
        "receipt": "given" if evidence.receipt_given else "served" if evidence.receipt is not None else None,
        "keys": evidence.keys_kind,
        "keys_url": evidence.keys_url,
        "checks": report.to_json()["checks"],
    }
    if len(evidence.beacon_chains) > len(KNOWN_CHAINS):
        document["beacon_chains_trusted"] = [chain.to_json() for chain in evidence.beacon_chains]
    if not subject.revealed and evidence.receipt is not None:
        document["commitment"] = {
            "server_seed_hash": evidence.receipt.get("server_seed_hash"),
            "created_at": evidence.receipt.get("created_at"),
        }
    return document
