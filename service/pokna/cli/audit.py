"""`pokna audit verify` (a ledger export or an audit bundle, offline) and `pokna audit bundle` (write one).

`pokna audit verify` is `pokna-verify audit` (pokna_verify.cli.audit_run), the command an auditor installs
without the service: the same function, options, output, --json and exit codes (0 VALID, 1 INVALID,
2 UNUSABLE input, 3 NOT REVEALED).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from pokna.cli.app import app
from pokna.cli.ledger import PROGRESS_OPTION, ChainOption, OutputOption, output_file
from pokna_verify.cli import usage
from pokna_verify.cli.progress import StderrProgress

audit_app = typer.Typer(help="Offline audits: ledger exports and audit bundles.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")


@audit_app.command("verify", help=f"{usage.AUDIT_SUMMARY}\n\n{usage.AUDIT_EXIT_CODES}")
def verify_command(
    source: Annotated[Path, typer.Argument(metavar=usage.AUDIT_SOURCE_METAVAR, help=usage.AUDIT_SOURCE)],
    keys: Annotated[str | None, typer.Option("--keys", help=usage.AUDIT_KEYS)] = None,
    checkpoint: Annotated[Path | None, typer.Option("--checkpoint", help=usage.AUDIT_CHECKPOINT)] = None,
    public_key: Annotated[str | None, typer.Option("--public-key", help=usage.AUDIT_PUBLIC_KEY)] = None,
    beacon_chain: Annotated[
        list[Path] | None, typer.Option("--beacon-chain", metavar="FILE", help=usage.BEACON_CHAIN)
    ] = None,
    previous_checkpoint: Annotated[
        Path | None, typer.Option("--previous-checkpoint", help=usage.AUDIT_PREVIOUS_CHECKPOINT)
    ] = None,
    processes: Annotated[int | None, typer.Option("--processes", min=1, help=usage.PROCESSES)] = None,
    progress: Annotated[bool | None, PROGRESS_OPTION] = None,
    as_json: Annotated[bool, typer.Option("--json", help=usage.JSON)] = False,
) -> None:
    from pokna_verify.cli.audit_run import run_audit

    raise typer.Exit(
        run_audit(
            source,
            keys=keys,
            checkpoint=checkpoint,
            public_key=public_key,
            beacon_chains=beacon_chain or [],
            previous_checkpoint=previous_checkpoint,
            processes=processes,
            progress=progress,
            as_json=as_json,
        )
    )


@audit_app.command("bundle")
def bundle_command(
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant id.")],
    chain: ChainOption = None,
    from_seq: Annotated[
        int | None, typer.Option("--from-seq", min=1, help="First seq, on --chain (which it needs).")
    ] = None,
    to_seq: Annotated[
        int | None, typer.Option("--to-seq", min=1, help="Last seq, on --chain (which it needs).")
    ] = None,
    from_time: Annotated[
        datetime | None,
        typer.Option("--from-time", help="From the first transaction at or after (UTC), on each chain."),
    ] = None,
    to_time: Annotated[
        datetime | None, typer.Option("--to-time", help="To the last transaction at or before (UTC).")
    ] = None,
    log_since: Annotated[
        int | None,
        typer.Option(
            "--log-since", min=1, help="The previous bundle's public log size: carry the proof from it."
        ),
    ] = None,
    output: OutputOption = None,
    progress: Annotated[bool | None, PROGRESS_OPTION] = None,
) -> None:
    """Write an audit bundle: the ledger over the range, every game's proof, checkpoints, key ring. Every
    chain in (chain, seq) order, or one chain (--chain); a seq range needs --chain (a seq is a position on one)."""
    from contextlib import nullcontext

    from pokna.bundles import BundleRange, open_bundle
    from pokna.cli.command_database import require_tenant, streamed_command
    from pokna.cli.errors import EXIT_USAGE, CommandError
    from pokna.errors import InvalidRequest
    from pokna.service_keys import load_service_keys
    from pokna.settings import get_settings

    span = BundleRange(from_seq, to_seq, utc(from_time), utc(to_time), chain, log_since)
    keys = load_service_keys(get_settings())
    # One connection for the whole bundle, in one event loop that the chunks are pulled through.
    with streamed_command() as streamed:
        connection = streamed.connection
        streamed.run(require_tenant(connection, tenant))
        try:
            bundle = streamed.run(open_bundle(connection, keys, tenant, span))
        except InvalidRequest as error:
            option = "--" + str(error.extensions["invalid_params"][0]["name"]).removeprefix("query.").replace(
                "_", "-"
            )
            raise CommandError(f"{option}: {error.detail}", exit_code=EXIT_USAGE) from None
        chunks = bundle.chunks(lambda: nullcontext(connection))
        with output_file(output) as handle:
            StderrProgress(progress).written(streamed.pulled(chunks), handle)


def utc(moment: datetime | None) -> datetime | None:
    """Typer reads a time without a zone; the ledger's times are UTC."""
    from datetime import UTC

    return moment if moment is None or moment.tzinfo is not None else moment.replace(tzinfo=UTC)
