"""`pokna roll` and `pokna verify`: the offline side of provable fairness. No database, no server.

This is the shell around `pokna.fairness`: it reads files and prints; every judgement is made by the pure
package, the same code the service and the browser page mirror.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Annotated

import typer

from pokna.cli.app import app
from pokna.cli.input_files import EXIT_UNUSABLE, UnusableInputError, read_json_object, read_public_key
from pokna.crypto.errors import CryptoError
from pokna.fairness.errors import FairnessError
from pokna.fairness.keyring import KeyRing
from pokna.fairness.proof_replay import replay_proof
from pokna.fairness.protocol import PROTOCOL, roll, server_seed_hash
from pokna.fairness.verification import CheckStatus, Replay, VerificationReport, verify_proof

EXIT_VALID = 0
EXIT_INVALID = 1


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


@app.command("verify")
def verify_command(
    proof_file: Annotated[
        Path, typer.Argument(metavar="PROOF.json", help="A proof from GET /v1/games/{id}/proof.")
    ],
    public_key: Annotated[
        Path | None,
        typer.Option(help="The operator's Ed25519 public key: PEM, or base64url of the raw 32 bytes."),
    ] = None,
    keys: Annotated[
        str | None,
        typer.Option(
            help="The key ring from GET /v1/fairness/keys: a saved JSON file, or the http(s) URL itself."
        ),
    ] = None,
    receipt: Annotated[
        Path | None, typer.Option(help="The commitment receipt you were given when the game was created.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Verify a game proof offline. Exit 0 valid, 1 invalid (failed checks named), 2 unusable input."""
    try:
        if public_key is not None and keys is not None:
            raise UnusableInputError("give --public-key or --keys, not both")
        proof = read_json_object(proof_file, "proof")
        trusted = read_public_key(public_key) if public_key else _read_key_ring(keys) if keys else None
        committed = read_json_object(receipt, "receipt") if receipt else None
        report = verify_proof(proof, trusted, replay=_replay(), receipt=committed)
    except (UnusableInputError, FairnessError, CryptoError) as error:
        if as_json:
            typer.echo(json.dumps({"valid": None, "error": str(error)}))
        else:
            typer.echo(f"UNUSABLE INPUT: {error}", err=True)
        raise typer.Exit(EXIT_UNUSABLE) from error
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        _print_report(str(proof.get("game_id")), report)
    raise typer.Exit(EXIT_VALID if report.valid else EXIT_INVALID)


def _print_report(game_id: str, report: VerificationReport) -> None:
    typer.echo(f"Proof of game {game_id}")
    for check in report.checks:
        typer.echo(f"  {check.status.upper():8} {check.name:19} {check.message}")
    if not report.valid:
        typer.echo(f"INVALID: failed checks: {', '.join(check.name for check in report.failed)}")
        return
    skipped = [check.name for check in report.checks if check.status is CheckStatus.NOT_RUN]
    typer.echo(f"VALID (not run: {', '.join(skipped)})" if skipped else "VALID")


def _read_key_ring(source: str) -> KeyRing:
    """A URL is fetched (the only network access `verify` makes, and only when asked); anything else is a file."""
    if source.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(source, timeout=10) as response:  # noqa: S310 (scheme checked above)
                document = json.loads(response.read().decode("utf-8"))
        except (OSError, ValueError) as error:
            raise UnusableInputError(f"cannot fetch the key ring from {source}: {error}") from error
        if not isinstance(document, dict):
            raise UnusableInputError(f"{source} did not answer with a JSON object")
        return KeyRing.from_json(document)
    return KeyRing.from_json(read_json_object(Path(source), "key ring"))
