"""`pokna roll`: one roll of the protocol, for checking by hand. Imports the roll function and nothing else,
so it starts at once."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from pokna.cli.app import app
from pokna_verify.cli.exit_codes import EXIT_UNUSABLE
from pokna_verify.crypto.errors import CryptoError
from pokna_verify.fairness.errors import FairnessError
from pokna_verify.fairness.protocol import PROTOCOL, roll, server_seed_hash


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
