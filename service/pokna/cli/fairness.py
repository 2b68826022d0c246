"""`pokna roll` and `pokna verify`: the offline side of provable fairness. No database, no server of ours.

This is the shell around `pokna.fairness`: it reads files (or the one URL the user gave, and the key ring that
link names) and prints; every judgement is made by the pure package, the same code the service and the
browser page mirror.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from pokna.cli.app import app
from pokna.cli.input_files import (
    EXIT_UNUSABLE,
    UnusableInputError,
)
from pokna.cli.verify_inputs import gather_evidence, read_subject
from pokna.cli.verify_report import (
    EXIT_CODES,
    Verdict,
    json_report,
    print_report,
    revealed_report,
    unrevealed_report,
    verdict_of,
)
from pokna.crypto.errors import CryptoError
from pokna.fairness.errors import FairnessError
from pokna.fairness.protocol import PROTOCOL, roll, server_seed_hash


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
        subject = read_subject(source)
        evidence = gather_evidence(source, subject, public_key, keys, receipt)
        if subject.proof is not None:
            report = revealed_report(subject.kind, subject.proof, evidence)
        else:
            report = unrevealed_report(subject, evidence)
    except (UnusableInputError, FairnessError, CryptoError) as error:
        if as_json:
            typer.echo(json.dumps({"verdict": str(Verdict.UNUSABLE), "valid": None, "error": str(error)}))
        else:
            typer.echo(f"UNUSABLE INPUT: {error}", err=True)
        raise typer.Exit(EXIT_UNUSABLE) from error
    verdict = verdict_of(subject, report)
    if as_json:
        typer.echo(json.dumps(json_report(source, subject, evidence, report, verdict), indent=2))
    else:
        print_report(source, subject, evidence, report, verdict)
    raise typer.Exit(EXIT_CODES[verdict])


# ---- what SOURCE is --------------------------------------------------------------------------------------


# ---- which receipt and which keys ------------------------------------------------------------------------


# ---- the checks ------------------------------------------------------------------------------------------


# ---- what is printed -------------------------------------------------------------------------------------
