"""`pokna roll` and `pokna verify`: the offline side of provable fairness. No database, no server of ours.

This is the shell around `pokna.fairness`: it reads files (or the one URL the user gave, and the key ring that
link names) and prints; every judgement is made by the pure package, the same code the service and the
browser page mirror.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from pokna.cli.app import app
from pokna.cli.input_files import (
    EXIT_UNUSABLE,
    UnusableInputError,
    fetch_json_object,
    is_url,
    read_json_object,
    read_json_source,
    read_public_key,
)
from pokna.crypto.errors import CryptoError
from pokna.fairness.errors import FairnessError, MalformedProofError
from pokna.fairness.keyring import KeyRing
from pokna.fairness.proof import SeedSource
from pokna.fairness.proof_replay import replay_proof
from pokna.fairness.protocol import PROTOCOL, client_seed_problem, roll, server_seed_hash
from pokna.fairness.receipt import RECEIPT_DOCUMENT
from pokna.fairness.verification import (
    CheckResult,
    CheckStatus,
    Keys,
    Replay,
    VerificationReport,
    verify_commitment_receipt,
    verify_proof,
)

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_NOT_REVEALED = 3

LINK_OBJECT = "fairness_link"
NO_SUCH_LINK = "no such proof link"
NOT_REVEALED = "not revealed yet: the server seed is published when the game ends"
NO_RECEIPT = "no commitment receipt given: pass --receipt FILE or verify the game's public link"
NO_KEYS = (
    "no key ring or public key given: pass --keys FILE|URL or --public-key FILE, "
    "or verify the game's public link"
)


def _replay() -> Replay | None:
    """The rules engine re-runs the proof's actions over its rolls: outcome and transfers must follow."""
    return replay_proof


@app.command("roll")
def roll_command(
    server_seed: Annotated[str, typer.Option(help="The revealed server seed: 64 lowercase hex characters.")],
    client_seed: Annotated[str, typer.Option(help="The game client seed (the proof's `client_seed`).")],
    nonce: Annotated[
        int, typer.Option(min=0, help="Roll number: 0 for the Vigo's favor roll, then 1, 2, ...")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Compute one roll of pokna-hmac-sha256-v1: f, the face and its colour."""
    try:
        result = roll(server_seed, client_seed, nonce)
        commitment = server_seed_hash(server_seed)
    except (FairnessError, CryptoError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_UNUSABLE) from error
    if as_json:
        document = {
            "protocol": PROTOCOL,
            "server_seed_hash": commitment,
            "client_seed": client_seed,
            "nonce": nonce,
            "hmac_sha256": result.digest.hex(),
            "f": result.f,
            "face": result.face,
            "color": str(result.color),
        }
        typer.echo(json.dumps(document))
        return
    typer.echo(f"server_seed_hash  {commitment}")
    typer.echo(f"hmac_sha256       {result.digest.hex()}")
    typer.echo(f"f                 {result.f!r}")
    typer.echo(f"face              {result.face}")
    typer.echo(f"colour            {result.color}")


class Verdict(StrEnum):
    VALID = "valid"
    INVALID = "invalid"
    UNUSABLE = "unusable"
    NOT_REVEALED = "not_revealed"


EXIT_CODES = {
    Verdict.VALID: EXIT_VALID,
    Verdict.INVALID: EXIT_INVALID,
    Verdict.UNUSABLE: EXIT_UNUSABLE,
    Verdict.NOT_REVEALED: EXIT_NOT_REVEALED,
}


@dataclass(frozen=True, slots=True)
class Subject:
    """What SOURCE turned out to be: a bare proof, a public link document, or the pending `/proof` answer."""

    kind: Literal["proof", "link", "pending"]
    game_id: str
    status: str | None
    proof: Mapping[str, Any] | None
    served_receipt: Mapping[str, Any] | None
    client_seeds: list[Any] | None
    keys_url: str | None

    @property
    def revealed(self) -> bool:
        return self.proof is not None

    def describe(self) -> str:
        if self.kind == "link":
            return f"the public proof link of game {self.game_id} ({self.status})"
        if self.kind == "pending":
            return f"the proof answer of game {self.game_id} ({self.status})"
        return "a proof"


@dataclass(frozen=True, slots=True)
class Evidence:
    """The receipt and keys used, where each came from (printed: which one was trusted is the user's to see),
    or why there is none (printed as the reason its check did not run)."""

    receipt: Mapping[str, Any] | None
    receipt_from: str | None
    receipt_given: bool
    receipt_missing: str
    keys: Keys | None
    keys_from: str | None
    keys_missing: str
    keys_kind: str | None = None  # "public_key", "key_ring" or "fetched"
    keys_url: str | None = None


@app.command("verify")
def verify_command(
    source: Annotated[
        str,
        typer.Argument(
            metavar="SOURCE",
            help=(
                "The game's public proof link (https://host/v1/fairness/proofs/TOKEN), a saved copy of it, or a "
                "proof from GET /v1/games/{id}/proof."
            ),
        ),
    ],
    public_key: Annotated[
        Path | None,
        typer.Option(help="The operator's Ed25519 public key: PEM, or base64url of the raw 32 bytes."),
    ] = None,
    keys: Annotated[
        str | None,
        typer.Option(
            help=(
                "The key ring from GET /v1/fairness/keys: a saved JSON file, or the http(s) URL itself. "
                "Without it (or --public-key), a link URL's own keys_url is fetched, and said so."
            )
        ),
    ] = None,
    receipt: Annotated[
        Path | None,
        typer.Option(
            help="The commitment receipt you were given when the game was created; wins over the link's."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Verify a game proof offline. Exit 0 valid, 1 invalid (failed checks named), 2 unusable input,
    3 not revealed yet (the game has not ended)."""
    try:
        if public_key is not None and keys is not None:
            raise UnusableInputError("give --public-key or --keys, not both")
        subject = _read_subject(source)
        evidence = _gather_evidence(source, subject, public_key, keys, receipt)
        if subject.proof is not None:
            report = _revealed_report(subject.kind, subject.proof, evidence)
        else:
            report = _unrevealed_report(subject, evidence)
    except (UnusableInputError, FairnessError, CryptoError) as error:
        if as_json:
            typer.echo(json.dumps({"verdict": str(Verdict.UNUSABLE), "valid": None, "error": str(error)}))
        else:
            typer.echo(f"UNUSABLE INPUT: {error}", err=True)
        raise typer.Exit(EXIT_UNUSABLE) from error
    verdict = _verdict(subject, report)
    if as_json:
        typer.echo(json.dumps(_json_report(source, subject, evidence, report, verdict), indent=2))
    else:
        _print_report(source, subject, evidence, report, verdict)
    raise typer.Exit(EXIT_CODES[verdict])


# ---- what SOURCE is --------------------------------------------------------------------------------------


def _read_subject(source: str) -> Subject:
    document = read_json_source(source, "proof", not_found=NO_SUCH_LINK)
    try:
        return _subject_of(document)
    except UnusableInputError as error:
        raise UnusableInputError(f"{source}: {error}") from error


def _subject_of(document: Mapping[str, Any]) -> Subject:
    if document.get("object") == LINK_OBJECT:
        return _link_subject(document)
    if document.get("revealed") is False and "commitment" in document:
        return _pending_subject(document)
    if document.get("document") == RECEIPT_DOCUMENT:
        raise UnusableInputError(
            "a commitment receipt, not a proof: pass it as --receipt, with the proof or the game's link"
        )
    if not {"protocol", "document", "server_seed"} & document.keys():
        raise UnusableInputError(
            'neither a proof ("document": "proof"), a public proof link ("object": "fairness_link"), '
            'nor a pending proof answer ("revealed": false)'
        )
    return Subject("proof", str(document.get("game_id")), None, document, None, None, None)


def _link_subject(document: Mapping[str, Any]) -> Subject:
    """The link's wrapper is not signed: only the proof and the receipt inside it are evidence."""
    revealed, proof = document.get("revealed"), document.get("proof")
    if not isinstance(revealed, bool):
        raise UnusableInputError("the link's `revealed` is neither true nor false")
    if revealed and not isinstance(proof, Mapping):
        raise UnusableInputError("the link says the game is revealed but carries no proof")
    if not revealed and proof is not None:
        raise UnusableInputError("the link says the game is not revealed yet but carries a proof")
    client_seeds = document.get("client_seeds")
    keys_url = document.get("keys_url")
    return Subject(
        "link",
        str(document.get("game_id")),
        str(document.get("status")),
        proof,
        _receipt_or_none(document.get("commitment"), "the link's commitment"),
        client_seeds if isinstance(client_seeds, list) else None,
        keys_url if isinstance(keys_url, str) else None,
    )


def _pending_subject(document: Mapping[str, Any]) -> Subject:
    """`GET /v1/games/{id}/proof` before the game ends: the commitment only."""
    commitment = _receipt_or_none(document.get("commitment"), "the answer's commitment")
    return Subject(
        "pending", str(document.get("game_id")), str(document.get("status")), None, commitment, None, None
    )


def _receipt_or_none(value: object, what: str) -> Mapping[str, Any] | None:
    if value is None or isinstance(value, Mapping):
        return value
    raise UnusableInputError(f"{what} is not a JSON object")


# ---- which receipt and which keys ------------------------------------------------------------------------


def _gather_evidence(
    source: str, subject: Subject, public_key: Path | None, keys: str | None, receipt: Path | None
) -> Evidence:
    """A receipt the user gives wins over the one the link serves. Keys are the user's if given; else a link
    URL's `keys_url` is fetched, resolved against the URL (a saved link has no origin to resolve it against)."""
    if receipt is not None:
        chosen_receipt: Mapping[str, Any] | None = read_json_object(receipt, "receipt")
        served = "the link serves" if subject.kind == "link" else "the answer holds"
        overriding = (
            f" (given, so the one {served} is not used)" if subject.served_receipt is not None else ""
        )
        receipt_from: str | None = f"yours, {receipt}{overriding}"
    else:
        chosen_receipt = subject.served_receipt
        where = "served with the link" if subject.kind == "link" else "in the proof answer"
        receipt_from = (
            f"the one {where} (pass --receipt FILE to use the one you kept)"
            if chosen_receipt is not None
            else None
        )
    receipt_missing = (
        "the link serves no commitment receipt: pass --receipt FILE" if subject.kind == "link" else NO_RECEIPT
    )
    keys_missing = NO_KEYS
    if subject.kind == "link" and not is_url(source):
        keys_missing = (
            "a saved link has no origin to fetch its keys_url from: pass --keys FILE|URL or "
            "--public-key FILE, or verify the link's URL"
        )
    partial = Evidence(
        chosen_receipt, receipt_from, receipt is not None, receipt_missing, None, None, keys_missing
    )
    if public_key is not None:
        return dataclasses.replace(
            partial,
            keys=read_public_key(public_key),
            keys_kind="public_key",
            keys_from=f"the public key in {public_key} (--public-key)",
        )
    if keys is not None:
        return dataclasses.replace(
            partial,
            keys=_read_key_ring(keys),
            keys_kind="key_ring",
            keys_from=f"the key ring {keys} (--keys)",
        )
    if is_url(source) and subject.keys_url is not None:
        return _fetched_keys(partial, urllib.parse.urljoin(source, subject.keys_url))
    return partial


def _fetched_keys(partial: Evidence, keys_url: str) -> Evidence:
    """Trusting the operator's own published ring is a choice: it is printed, never silent. A ring that cannot
    be had leaves the signature checks not run, with the reason, rather than the whole verification unusable."""
    try:
        ring = KeyRing.from_json(fetch_json_object(keys_url, "key ring"))
    except (UnusableInputError, CryptoError) as error:
        return dataclasses.replace(
            partial, keys_missing=f"the link's key ring is unusable ({error}); pass --keys or --public-key"
        )
    return dataclasses.replace(
        partial,
        keys=ring,
        keys_kind="fetched",
        keys_url=keys_url,
        keys_from=(
            f"the operator's published key ring, fetched from {keys_url} "
            "(pass --keys or --public-key to use keys you obtained yourself)"
        ),
    )


def _read_key_ring(source: str) -> KeyRing:
    """A URL is fetched (only because the user gave it); anything else is a file."""
    return KeyRing.from_json(read_json_source(source, "key ring"))


# ---- the checks ------------------------------------------------------------------------------------------


def _revealed_report(
    kind: Literal["proof", "link", "pending"], proof: Mapping[str, Any], evidence: Evidence
) -> VerificationReport:
    try:
        report = verify_proof(proof, evidence.keys, _replay(), evidence.receipt)
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


def _unrevealed_report(subject: Subject, evidence: Evidence) -> VerificationReport:
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


def _verdict(subject: Subject, report: VerificationReport) -> Verdict:
    """A failed check is INVALID even before the reveal: a forged commitment need not wait for the end."""
    if not report.valid:
        return Verdict.INVALID
    if not subject.revealed:
        return Verdict.NOT_REVEALED
    return Verdict.VALID


# ---- what is printed -------------------------------------------------------------------------------------


def _print_report(
    source: str, subject: Subject, evidence: Evidence, report: VerificationReport, verdict: Verdict
) -> None:
    heading = "Proof" if subject.revealed else "Commitment"
    game_id = str(subject.proof.get("game_id")) if subject.proof is not None else subject.game_id
    typer.echo(f"{heading} of game {game_id}")
    typer.echo(f"  source   {source}: {subject.describe()}")
    if evidence.receipt_from is not None:
        typer.echo(f"  receipt  {evidence.receipt_from}")
    if evidence.keys_from is not None:
        typer.echo(f"  keys     {evidence.keys_from}")
    for check in report.checks:
        typer.echo(f"  {check.status.upper():8} {check.name:19} {check.message}")
    if verdict is Verdict.INVALID:
        typer.echo(f"INVALID: failed checks: {', '.join(check.name for check in report.failed)}")
    elif verdict is Verdict.NOT_REVEALED:
        typer.echo(
            f"NOT REVEALED YET: game {subject.game_id} is {subject.status}; "
            "the server seed stays secret until it ends"
        )
        if evidence.receipt is not None:
            typer.echo(f"  server_seed_hash  {evidence.receipt.get('server_seed_hash')}")
            typer.echo(f"  committed at      {evidence.receipt.get('created_at')}")
    elif report.not_run:
        reasons = "; ".join(f"{check.name} ({check.message})" for check in report.not_run)
        typer.echo(f"VALID, but not every check ran: {reasons}")
    else:
        typer.echo("VALID")


def _json_report(
    source: str, subject: Subject, evidence: Evidence, report: VerificationReport, verdict: Verdict
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "verdict": str(verdict),
        "valid": report.valid if subject.revealed or verdict is Verdict.INVALID else None,
        "every_check_ran": not report.not_run,
        "game_id": subject.game_id if subject.proof is None else subject.proof.get("game_id"),
        "source": {"given": source, "kind": subject.kind, "status": subject.status},
        "receipt": "given" if evidence.receipt_given else "served" if evidence.receipt is not None else None,
        "keys": evidence.keys_kind,
        "keys_url": evidence.keys_url,
        "checks": report.to_json()["checks"],
    }
    if not subject.revealed and evidence.receipt is not None:
        document["commitment"] = {
            "server_seed_hash": evidence.receipt.get("server_seed_hash"),
            "created_at": evidence.receipt.get("created_at"),
        }
    return document
