"""`pokna ledger ...` (export, reconcile, checkpoint); its output file and progress option serve `pokna
audit` too (pokna.cli.audit, pokna.cli.audit_report).

The shell around pokna.ledger: it opens the database and prints; every judgement is the package's. The
offline check of what `ledger export` writes is `pokna audit verify`, which is `pokna-verify audit`
(pokna_verify.cli).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from psycopg import AsyncConnection

from pokna.cli.app import app
from pokna.cli.command_database import require_tenant, run_command, streamed_command
from pokna.cli.errors import EXIT_FAILURE, CommandError
from pokna.ledger import EXPORTERS, check_chain, check_seq_bounds, checkpoint_document, reconcile
from pokna.ledger.checkpoint import Checkpoint, take_checkpoint_async
from pokna.ledger.export_aio import EXPORT_FORMATS
from pokna.ledger.reconcile import ReconcileReport
from pokna.service_keys import load_service_keys
from pokna.settings import get_settings
from pokna_verify.cli import usage
from pokna_verify.cli.progress import StderrProgress
from pokna_verify.ledger.chain import LEDGER_CHAINS, chain_label

ledger_app = typer.Typer(help="The double-entry ledger: export, reconcile, checkpoint.", no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")


@contextmanager
def output_file(path: Path | None) -> Iterator[TextIO]:
    """`-` is stdout, as it is stdin to the verifiers (`... -o - | pokna audit verify -`), not a file named `-`.
    A write to it that fails (`> /dev/full`) is said in one line, as a file's is (`whole_file`)."""
    if path is None or str(path) == "-":
        try:
            yield sys.stdout
            sys.stdout.flush()
        except OSError as error:
            if error.filename is not None:
                raise
            raise CommandError(f"cannot write standard output: {error.strerror or error}") from None
        return
    with whole_file(path) as handle:
        yield handle


@contextmanager
def whole_file(
    path: Path, hint: str = "give -o a file in a writable directory", exit_code: int = EXIT_FAILURE
) -> Iterator[TextIO]:
    """A file is written under a name of its own beside it and renamed to `path` only once whole: a journal's
    prefix verifies, so an export stopped half-way (Ctrl-C, a lost database, a full disk) must leave no file
    that could pass for the whole one; nor may a report's page. A device or a pipe (`/dev/stdout`) is written
    in place: it cannot be renamed onto. `hint` and `exit_code` are the caller's answer to a file it cannot
    open or write (a full disk: one line naming the file, never "unexpected OSError")."""
    if path.is_dir():
        raise CommandError(f"cannot write {path}: it is a directory", hint, exit_code=exit_code)
    in_place = path.exists() and not path.is_file()
    writing = path if in_place else path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        handle = writing.open("w" if in_place else "x", encoding="utf-8", newline="")
    except OSError as error:
        raise CommandError(
            f"cannot write {path}: {error.strerror or error}", hint, exit_code=exit_code
        ) from None
    try:
        with handle:
            if not in_place and path.is_file():  # a file replaced keeps its mode: one made 0600 stays so
                writing.chmod(stat.S_IMODE(path.stat().st_mode))
            yield handle
        if not in_place:
            writing.replace(path)
    except OSError as error:
        # A write that fails (a full disk, a file-size limit) names no file: this is the one that knows it.
        if error.filename not in (None, str(writing), str(path)):
            raise
        raise CommandError(
            f"cannot write {path}: {error.strerror or error}", hint, exit_code=exit_code
        ) from None
    finally:
        if not in_place:
            writing.unlink(missing_ok=True)


PROGRESS_OPTION = typer.Option("--progress/--no-progress", help=usage.PROGRESS)
ChainOption = Annotated[
    int | None,
    typer.Option("--chain", min=0, max=LEDGER_CHAINS - 1, help="Only this chain (default: every chain)."),
]
OutputOption = Annotated[
    Path | None, typer.Option("-o", "--output", help="File to write (default, or -: stdout).")
]


@ledger_app.command("export")
def export_command(
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant id.")],
    export_format: Annotated[
        str, typer.Option("--format", help=f"One of: {', '.join(EXPORT_FORMATS)}.")
    ] = "jsonl",
    chain: ChainOption = None,
    from_seq: Annotated[
        int | None,
        typer.Option("--from-seq", min=1, help="First seq to export, on --chain (which it needs)."),
    ] = None,
    to_seq: Annotated[
        int | None,
        typer.Option("--to-seq", min=0, help="Last seq to export, on --chain (which it needs)."),
    ] = None,
    output: OutputOption = None,
    progress: Annotated[bool | None, PROGRESS_OPTION] = None,
) -> None:
    """Stream a tenant's journal as JSONL (what `pokna audit verify` reads), CSV or Beancount: every chain
    in (chain, seq) order, or one chain (--chain); a seq range needs --chain (a seq is a position on one)."""
    if export_format not in EXPORT_FORMATS:
        raise typer.BadParameter(f"one of {', '.join(EXPORT_FORMATS)}", param_hint="--format")
    # Checked now, before the file is opened and before the first line is asked for.
    check_chain(chain)
    check_seq_bounds(chain, from_seq, to_seq)
    exporter = EXPORTERS[export_format]

    async def chunks(connection: AsyncConnection[Any]) -> AsyncIterator[str]:
        async with connection.transaction():  # one transaction throughout: the heads read first bound it
            async for chunk in exporter(connection, tenant, chain, from_seq, to_seq):
                yield chunk

    with streamed_command() as streamed:
        streamed.run(require_tenant(streamed.connection, tenant))
        with output_file(output) as handle:
            StderrProgress(progress).written(streamed.pulled(chunks(streamed.connection)), handle)


@ledger_app.command("reconcile")
def reconcile_command(
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant (default: all).")] = None,
    chain: Annotated[
        bool, typer.Option("--chain/--no-chain", help="Also re-verify every hash chain.")
    ] = True,
) -> None:
    """Compare stored balances with the sum of postings. Exit 1 when anything disagrees."""

    async def reconciled(connection: AsyncConnection[Any]) -> ReconcileReport:
        if tenant is not None:
            await require_tenant(connection, tenant)
        return await reconcile(connection, tenant, check_chain=chain)

    report = run_command(reconciled)
    for difference in report.differences:
        typer.echo(
            f"DRIFT    {difference.account_id} (tenant {difference.tenant_id}): stored {difference.stored}, "
            f"postings sum to {difference.computed}"
        )
    for tenant_id, on_chain, seq, transaction_id in report.unbalanced_transactions:
        typer.echo(f"UNBALANCED tenant {tenant_id} {chain_label(on_chain, seq)} ({transaction_id})")
    for tenant_id, problem in report.chain_problems:
        typer.echo(f"CHAIN    tenant {tenant_id}: {problem}")
    for tenant_id, count in report.chain_problems_not_listed.items():
        typer.echo(f"CHAIN    tenant {tenant_id}: ... and {count} more finding(s), not listed")
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
    output: OutputOption = None,
) -> None:
    """Sign the tenant's current chain head with the service key and print the checkpoint document."""
    signing_key = load_service_keys(get_settings()).signing_key

    async def taken(connection: AsyncConnection[Any]) -> Checkpoint:
        await require_tenant(connection, tenant)
        async with connection.transaction():
            return await take_checkpoint_async(connection, tenant, signing_key)

    document = checkpoint_document(run_command(taken))
    with output_file(output) as handle:
        handle.write(json.dumps(document, indent=2) + "\n")
