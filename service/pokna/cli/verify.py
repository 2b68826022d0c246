"""`pokna verify`: the offline side of provable fairness. No database, no server of ours.

It is `pokna-verify proof` (pokna_verify.cli), the command a player installs without the service: the same
function reads SOURCE, gathers the keys and receipt to trust, runs the pure checks and prints, with the same
options, output, --json and exit codes. The work is imported when the command runs, so that `pokna verify
--help` and every other command start without the verifier's imports (the rules engine, cryptography,
urllib).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pokna.cli.app import app
from pokna_verify.cli import usage


@app.command("verify", help=f"{usage.PROOF_SUMMARY}\n\n{usage.PROOF_EXIT_CODES}")
def verify_command(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help=usage.PROOF_SOURCE)],
    server: Annotated[str | None, typer.Option(metavar="URL", help=usage.PROOF_SERVER)] = None,
    public_key: Annotated[Path | None, typer.Option(help=usage.PROOF_PUBLIC_KEY)] = None,
    keys: Annotated[str | None, typer.Option(help=usage.PROOF_KEYS)] = None,
    receipt: Annotated[Path | None, typer.Option(help=usage.PROOF_RECEIPT)] = None,
    log: Annotated[str | None, typer.Option(metavar="URL", help=usage.PROOF_LOG)] = None,
    state: Annotated[Path | None, typer.Option(metavar="FILE", help=usage.PROOF_STATE)] = None,
    beacon_chain: Annotated[list[Path] | None, typer.Option(metavar="FILE", help=usage.BEACON_CHAIN)] = None,
    as_json: Annotated[bool, typer.Option("--json", help=usage.JSON)] = False,
) -> None:
    from pokna_verify.cli.proof_run import run_proof  # deliberately here: see the module's docstring

    raise typer.Exit(
        run_proof(
            source,
            server=server,
            public_key=public_key,
            keys=keys,
            receipt=receipt,
            beacon_chains=beacon_chain or [],
            as_json=as_json,
            log=log,
            state=state,
        )
    )
