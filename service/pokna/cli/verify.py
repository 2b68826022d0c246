"""`pokna verify`: the offline side of provable fairness. No database, no server of ours.

The command reads what the user hands it (a proof, or a game's public link, and the keys and receipt to trust)
and prints; every judgement is made by the pure `pokna_verify.fairness`, the same code the service and the browser
page mirror. The work is `pokna.cli.verify_run`, imported when the command runs, so that `pokna verify --help`
and every other command start without the verifier's imports (the rules engine, cryptography, urllib).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pokna.cli.app import app
from pokna.cli.beacon_chains import BEACON_CHAIN_HELP


@app.command("verify")
def verify_command(
    source: Annotated[
        str,
        typer.Argument(
            metavar="SOURCE",
            help=(
                "What you hold of the game: its browser link (https://host/verify?proof=TOKEN), its public "
                "proof link (https://host/v1/fairness/proofs/TOKEN), a saved copy of that link's document, "
                "a proof from GET /v1/games/{id}/proof, or the bare TOKEN with --server."
            ),
        ),
    ],
    server: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help=(
                "The service's base URL (https://host), to fetch a bare TOKEN or a link given without its "
                "site (/verify?proof=TOKEN) from. Nothing else is fetched from it."
            ),
        ),
    ] = None,
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
    beacon_chain: Annotated[
        list[Path] | None,
        typer.Option(metavar="FILE", help=BEACON_CHAIN_HELP),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Verify a game proof offline.

    Exit codes: 0 valid (every check ran and passed); 1 invalid (the failed checks are named); 2 unusable
    input; 3 not revealed yet (the game has not ended); 4 partly verified (nothing failed, but a check could
    not run, e.g. the signature without keys or the receipt without --receipt: not a pass).
    """
    from pokna.cli.verify_run import run_verify  # deliberately here: see the module's docstring

    raise typer.Exit(
        run_verify(
            source,
            server=server,
            public_key=public_key,
            keys=keys,
            receipt=receipt,
            beacon_chains=beacon_chain or [],
            as_json=as_json,
        )
    )
