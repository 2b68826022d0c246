"""`pokna ledger ...` (export, reconcile, checkpoint) and `pokna audit verify` (offline, no database).

The shell around pokna.ledger: it opens the database or reads files and prints; every judgement is the
package's. `audit verify` exits 0 when the export is valid, 1 when it is not (each finding names its seq)
and 2 when the input cannot be judged at all.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, TextIO

import typer

from pokna.cli.app import app
from pokna.cli.command_session import command_session, require_tenant
from pokna.cli.errors import CommandError
from pokna.ledger import (
    checkpoint_document,
    export_lines,
    reconcile,
    take_checkpoint,
)
from pokna.ledger.export import EXPORT_FORMATS
from pokna.service_keys import load_service_keys
from pokna.settings import get_settings
from pokna_verify.ledger.chain import LEDGER_CHAINS, chain_label

EXIT_VALID = 0
EXIT_INVALID = 1

ledger_app = typer.Typer(help="The double-entry ledger: export, reconcile, checkpoint.", no_args_is_help=True)
audit_app = typer.Typer(help="Offline audits: ledger exports and audit bundles.", no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")
app.add_typer(audit_app, name="audit")


@contextmanager
def output_file(path: Path | None) -> Iterator[TextIO]:
    if path is None:
        yield sys.stdout
        return
    try:
        handle = path.open("w", encoding="utf-8", newline="")
    except OSError as error:
        raise CommandError(
            f"cannot write {path}: {error.strerror or error}", "give -o a file in a writable directory"
        ) from None
    with handle:
        yield handle


_clock = time.monotonic  # read at each call: the tests move it


class StderrProgress:
    """How far a long command has got, on one stderr line rewritten in place: shown once the command has
    run for a second (a quick command says nothing), at most four times a second, and only when stderr is a
    terminal unless `enabled` says otherwise (--progress/--no-progress). stdout, the command's answer, is
    never touched."""

    _AFTER_SECONDS = 1.0
    _EVERY_SECONDS = 0.25

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._started = _clock()
        self._shown_at: float | None = None

    def show(self, progress: str) -> None:
        """`progress` as "12,000 records read"; cheap enough to call for every line."""
        if not self.enabled:
            return
        now = _clock()
        if now - self._started < self._AFTER_SECONDS:
            return
        if self._shown_at is not None and now - self._shown_at < self._EVERY_SECONDS:
            return
        self._shown_at = now
        print(f"\r  {progress} ...", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self._shown_at is not None:
            print(file=sys.stderr)
            self._shown_at = None

    def written(self, chunks: Iterable[str], handle: TextIO) -> None:
        """Write `chunks` to `handle`, saying how many lines and MiB are written so far."""
        lines = size = 0
        try:
            for chunk in chunks:
                handle.write(chunk)
                lines += chunk.count("\n")
                size += len(chunk)
                self.show(f"{lines:,} lines, {size / 2**20:,.0f} MiB written")
        finally:
            self.done()


PROGRESS_OPTION = typer.Option(
    "--progress/--no-progress",
    help="Progress on stderr once past a second (default: when stderr is a terminal).",
)


@ledger_app.command("export")
def export_command(
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant id.")],
    export_format: Annotated[
        str, typer.Option("--format", help=f"One of: {', '.join(EXPORT_FORMATS)}.")
    ] = "jsonl",
    chain: Annotated[
        int | None,
        typer.Option("--chain", min=0, max=LEDGER_CHAINS - 1, help="Only this chain (default: every chain)."),
    ] = None,
    from_seq: Annotated[
        int | None,
        typer.Option("--from-seq", min=1, help="First seq to export, on --chain (which it needs)."),
    ] = None,
    to_seq: Annotated[
        int | None,
        typer.Option("--to-seq", min=0, help="Last seq to export, on --chain (which it needs)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="File to write (default stdout).")
    ] = None,
    progress: Annotated[bool | None, PROGRESS_OPTION] = None,
) -> None:
    """Stream a tenant's journal as JSONL (what `pokna audit verify` reads), CSV or Beancount: every chain
    in (chain, seq) order, or one chain (--chain); a seq range without --chain is chain 0's."""
    if export_format not in EXPORT_FORMATS:
        raise typer.BadParameter(f"one of {', '.join(EXPORT_FORMATS)}", param_hint="--format")
    with command_session() as session:
        require_tenant(session, tenant)
        with output_file(output) as handle:
            chunks = export_lines(
                session, tenant, export_format, chain=chain, from_seq=from_seq, to_seq=to_seq
            )
            StderrProgress(progress).written(chunks, handle)


@ledger_app.command("reconcile")
def reconcile_command(
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant (default: all).")] = None,
    chain: Annotated[
        bool, typer.Option("--chain/--no-chain", help="Also re-verify every hash chain.")
    ] = True,
) -> None:
    """Compare stored balances with the sum of postings. Exit 1 when anything disagrees."""
    with command_session() as session:
        if tenant is not None:
            require_tenant(session, tenant)
        report = reconcile(session, tenant, check_chain=chain)
    for difference in report.differences:
        typer.echo(
            f"DRIFT    {difference.account_id} (tenant {difference.tenant_id}): stored {difference.stored}, "
            f"postings sum to {difference.computed}"
        )
    for tenant_id, on_chain, seq, transaction_id in report.unbalanced_transactions:
        typer.echo(f"UNBALANCED tenant {tenant_id} {chain_label(on_chain, seq)} ({transaction_id})")
    for tenant_id, problem in report.chain_problems:
        typer.echo(f"CHAIN    tenant {tenant_id}: {problem}")
    if not report.ok:
        typer.echo("RECONCILE FAILED")
        raise typer.Exit(1)
    typer.echo(
        "reconciled: every stored balance equals the sum of its postings"
        + (", chains intact" if chain else "")
    )


@ledger_app.command("checkpoint")
def checkpoint_command(
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant id.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="File to write (default stdout).")
    ] = None,
) -> None:
    """Sign the tenant's current chain head with the service key and print the checkpoint document."""
    signing_key = load_service_keys(get_settings()).signing_key
    with command_session() as session:
        require_tenant(session, tenant)
        document = checkpoint_document(take_checkpoint(session, tenant, signing_key))
    with output_file(output) as handle:
        handle.write(json.dumps(document, indent=2) + "\n")


# `pokna audit ...` lives in pokna.cli.audit and pokna.cli.audit_report, on audit_app above.
import pokna.cli.audit  # noqa: E402
import pokna.cli.audit_report  # noqa: E402, F401
