"""`pokna ledger ...` (export, reconcile, checkpoint) and `pokna audit verify` (offline, no database).

The shell around pokna.ledger: it opens the database or reads files and prints; every judgement is the
package's. `audit verify` exits 0 when the export is valid, 1 when it is not (each finding names its seq)
and 2 when the input cannot be judged at all.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, BinaryIO, TextIO

import typer

from pokna.cli.app import app
from pokna.cli.command_session import command_session, require_tenant
from pokna.cli.errors import CommandError
from pokna.cli.exit_codes import EXIT_UNUSABLE
from pokna.cli.input_files import UnusableInputError, read_json_object, read_public_key
from pokna.crypto.errors import CryptoError
from pokna.fairness.errors import FairnessError
from pokna.ledger import (
    AuditReport,
    checkpoint_document,
    export_lines,
    reconcile,
    take_checkpoint,
    verify_export_stream,
)
from pokna.ledger.audit import UnusableCheckpoint
from pokna.ledger.export import EXPORT_FORMATS
from pokna.service_keys import load_service_keys
from pokna.settings import get_settings

EXIT_VALID = 0
EXIT_INVALID = 1

ledger_app = typer.Typer(help="The double-entry ledger: export, reconcile, checkpoint.", no_args_is_help=True)
audit_app = typer.Typer(help="Offline audits of ledger exports. No database needed.", no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")
app.add_typer(audit_app, name="audit")


@contextmanager
def _output(path: Path | None) -> Iterator[TextIO]:
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


@ledger_app.command("export")
def export_command(
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant id.")],
    export_format: Annotated[
        str, typer.Option("--format", help=f"One of: {', '.join(EXPORT_FORMATS)}.")
    ] = "jsonl",
    from_seq: Annotated[int | None, typer.Option("--from-seq", min=1, help="First seq to export.")] = None,
    to_seq: Annotated[int | None, typer.Option("--to-seq", min=0, help="Last seq to export.")] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="File to write (default stdout).")
    ] = None,
) -> None:
    """Stream a tenant's journal as JSONL (what `pokna audit verify` reads), CSV or Beancount."""
    if export_format not in EXPORT_FORMATS:
        raise typer.BadParameter(f"one of {', '.join(EXPORT_FORMATS)}", param_hint="--format")
    with command_session() as session:
        require_tenant(session, tenant)
        with _output(output) as handle:
            for chunk in export_lines(session, tenant, export_format, from_seq=from_seq, to_seq=to_seq):
                handle.write(chunk)


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
    for tenant_id, seq, transaction_id in report.unbalanced_transactions:
        typer.echo(f"UNBALANCED tenant {tenant_id} seq {seq} ({transaction_id})")
    for tenant_id, problem_seq, problem in report.chain_problems:
        typer.echo(f"CHAIN    tenant {tenant_id} seq {problem_seq}: {problem}")
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
    with _output(output) as handle:
        handle.write(json.dumps(document, indent=2) + "\n")


@audit_app.command("verify")
def verify_command(
    export_file: Annotated[
        Path,
        typer.Argument(metavar="EXPORT.jsonl", help="A `pokna ledger export` JSONL file, or - for stdin."),
    ],
    checkpoint: Annotated[
        Path | None, typer.Option("--checkpoint", help="A signed checkpoint the export must contain.")
    ] = None,
    public_key: Annotated[
        Path | None,
        typer.Option(
            "--public-key", help="The operator's Ed25519 public key: PEM, or base64url of the raw 32 bytes."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Verify a ledger export offline: hash chain, balance of every transaction, balances, trial balance."""
    try:
        if public_key is not None and checkpoint is None:
            raise UnusableInputError("--public-key checks a --checkpoint; give both")
        checkpoint_json = read_json_object(checkpoint, "checkpoint") if checkpoint else None
        key = read_public_key(public_key) if public_key else None
        with _open_export(export_file) as stream:
            report = verify_export_stream(stream, checkpoint=checkpoint_json, public_key=key)
    except (UnusableInputError, UnusableCheckpoint, FairnessError, CryptoError) as error:
        if as_json:
            typer.echo(json.dumps({"valid": None, "error": str(error)}))
        else:
            typer.echo(f"UNUSABLE INPUT: {error}", err=True)
        raise typer.Exit(EXIT_UNUSABLE) from error
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        _print_report(export_file, report)
    raise typer.Exit(EXIT_VALID if report.valid else EXIT_INVALID)


@contextmanager
def _open_export(path: Path) -> Iterator[BinaryIO]:
    if str(path) == "-":
        yield sys.stdin.buffer
        return
    try:
        handle = path.open("rb")
    except OSError as error:
        raise UnusableInputError(f"cannot read the export {path}: {error.strerror or error}") from error
    with handle:
        yield handle


def _print_report(path: Path, report: AuditReport) -> None:
    span = "empty" if report.first_seq is None else f"seq {report.first_seq}-{report.last_seq}"
    typer.echo(
        f"Ledger export {path}: tenant {report.tenant_id}, {span}, "
        f"{report.transactions} transactions, {report.postings} postings"
    )
    typer.echo(f"  head hash      {report.head_hash}")
    for currency, total in sorted(report.trial_balance().items()):
        typer.echo(f"  trial balance  {total} {currency}")
    if report.checkpoint_checked:
        typer.echo("  checkpoint     checked")
    for note in report.notes:
        typer.echo(f"  note: {note}")
    for finding in report.findings:
        where = f"seq {finding.seq}" if finding.seq is not None else "-"
        line = f"line {finding.line}" if finding.line is not None else "checkpoint"
        typer.echo(f"  FAIL  {where:>12}  {line:>10}  {finding.problem}")
    typer.echo("VALID" if report.valid else f"INVALID: {len(report.findings)} finding(s)")
