"""`pokna audit verify` (a ledger export or an audit bundle, offline) and `pokna audit bundle` (write one).

Verify's answers: 0 VALID, 1 INVALID (each finding names its record), 2 UNUSABLE input (nothing that could
be judged, an empty export or bundle included), 3 NOT REVEALED (a bundle with no finding whose games are not
all over yet: their money cannot be checked until their proofs exist).
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import typer

from pokna.cli.beacon_chains import BEACON_CHAIN_HELP, also_trusted, trusted_chains
from pokna.cli.exit_codes import EXIT_INVALID, EXIT_NOT_REVEALED, EXIT_UNUSABLE, EXIT_VALID
from pokna.cli.input_files import (
    UnusableInputError,
    public_key_argument,
    read_json_object,
    read_json_source,
)
from pokna.cli.ledger import PROGRESS_OPTION, StderrProgress, audit_app, output_file
from pokna.ledger import AuditReport, verify_export_stream
from pokna_verify.bundle.records import is_bundle
from pokna_verify.bundle.report import BundleReport, Verdict
from pokna_verify.bundle.scan import verify_bundle_stream
from pokna_verify.crypto.errors import CryptoError
from pokna_verify.fairness.errors import FairnessError
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.ledger.chain import LEDGER_CHAINS, chain_label
from pokna_verify.ledger.check import UnusableCheckpoint

_VERDICT_EXIT = {
    Verdict.VALID: EXIT_VALID,
    Verdict.INVALID: EXIT_INVALID,
    Verdict.UNREVEALED: EXIT_NOT_REVEALED,
}


@audit_app.command("verify")
def verify_command(
    source: Annotated[
        Path,
        typer.Argument(
            metavar="EXPORT.jsonl|BUNDLE.jsonl",
            help="A `pokna ledger export` JSONL file or an audit bundle (`pokna audit bundle`), or - for stdin.",
        ),
    ],
    keys: Annotated[
        str | None,
        typer.Option(
            "--keys", help="The published key ring: a file of GET /v1/fairness/keys's JSON, or its URL."
        ),
    ] = None,
    checkpoint: Annotated[
        Path | None, typer.Option("--checkpoint", help="A signed checkpoint a ledger export must contain.")
    ] = None,
    public_key: Annotated[
        str | None,
        typer.Option(
            "--public-key",
            help="The key that signed --checkpoint: a file (PEM or base64url) or the base64url text itself.",
        ),
    ] = None,
    beacon_chain: Annotated[
        list[Path] | None, typer.Option("--beacon-chain", metavar="FILE", help=BEACON_CHAIN_HELP)
    ] = None,
    processes: Annotated[
        int | None, typer.Option("--processes", min=1, help="Worker processes (default: every core).")
    ] = None,
    progress: Annotated[bool | None, PROGRESS_OPTION] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Verify a ledger export or an audit bundle offline; a bundle is recognized by its first record."""
    try:
        ring = read_keys(keys)
        chains = trusted_chains(beacon_chain or [])
        with open_source(source) as opened:
            first = opened.readline()
            if not first.strip():
                raise UnusableInputError(f"{source} is empty: there is nothing to verify")
            stream = rewound(opened, first)
            shown = StderrProgress(progress)
            if is_bundle(first):
                if checkpoint is not None or public_key is not None:
                    raise UnusableInputError(
                        "a bundle carries its checkpoints; check its signatures with --keys, not --public-key"
                    )
                try:
                    bundle = verify_bundle_stream(
                        stream,
                        keys=ring,
                        beacon_chains=chains,
                        processes=processes or cores(),
                        progress=lambda lines, _: shown.show(f"{lines:,} records read"),
                    )
                finally:
                    shown.done()
                if bundle.transactions == 0 and bundle.verdict is not Verdict.INVALID:
                    raise UnusableInputError(
                        f"the bundle {source} holds no transactions: there is nothing to verify"
                    )
                answer_bundle(source, bundle, as_json)
            if beacon_chain:
                raise UnusableInputError(
                    "--beacon-chain checks the beacon-mode games of an audit bundle; a ledger export holds no games"
                )
            reader = _ProgressReader(stream, shown) if shown.enabled else stream
            try:
                report = _verify_export(reader, ring, checkpoint, public_key, processes)
            finally:
                shown.done()
            if report.transactions == 0 and report.valid:
                raise UnusableInputError(
                    f"the export {source} holds no transactions: there is nothing to verify"
                )
    except (UnusableInputError, UnusableCheckpoint, FairnessError, CryptoError) as error:
        if as_json:
            typer.echo(json.dumps({"valid": None, "error": str(error)}))
        else:
            typer.echo(f"UNUSABLE INPUT: {error}", err=True)
        raise typer.Exit(EXIT_UNUSABLE) from error
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        _print_export_report(source, report)
    raise typer.Exit(EXIT_VALID if report.valid else EXIT_INVALID)


def read_keys(source: str | None) -> KeyRing | None:
    if source is None:
        return None
    return KeyRing.from_json(read_json_source(source, "key ring"))


def _verify_export(
    stream: Any,
    ring: KeyRing | None,
    checkpoint: Path | None,
    public_key: str | None,
    processes: int | None,
) -> AuditReport:
    if public_key is not None and checkpoint is None:
        raise UnusableInputError("--public-key checks a --checkpoint; give both")
    if ring is not None and checkpoint is None:
        raise UnusableInputError("--keys checks a --checkpoint's signature for an export; give --checkpoint")
    checkpoint_json = read_json_object(checkpoint, "checkpoint") if checkpoint else None
    key = public_key_argument(public_key) if public_key else None
    if ring is not None and checkpoint_json is not None:
        key = ring.get(str(checkpoint_json.get("key_id")))
    return verify_export_stream(stream, checkpoint=checkpoint_json, public_key=key, processes=processes)


def cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


class _Prepended(io.RawIOBase):
    """A pipe whose first line was already read, with that line put back in front."""

    def __init__(self, first: bytes, rest: BinaryIO) -> None:
        self._first, self._rest = first, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._first:
            size = min(len(buffer), len(self._first))
            buffer[:size], self._first = self._first[:size], self._first[size:]
            return size
        chunk = self._rest.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def fileno(self) -> int:
        raise OSError("a pipe")


class _ProgressReader:
    """The export as the verifier reads it, saying on stderr how far it has got."""

    def __init__(self, stream: BinaryIO, shown: StderrProgress) -> None:
        self._stream = stream
        self._shown = shown
        self._read = 0

    def _count(self, data: bytes) -> bytes:
        self._read += len(data)
        self._shown.show(f"{self._read >> 20:,} MiB read")
        return data

    def read(self, size: int = -1) -> bytes:
        return self._count(self._stream.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._count(self._stream.readline(size))

    def fileno(self) -> int:
        return self._stream.fileno()

    def seekable(self) -> bool:
        return self._stream.seekable()

    def tell(self) -> int:
        return self._stream.tell()


def rewound(stream: BinaryIO, first: bytes) -> BinaryIO:
    if stream.seekable():
        stream.seek(0)
        return stream
    return io.BufferedReader(_Prepended(first, stream))


@contextmanager
def open_source(path: Path) -> Iterator[Any]:
    if str(path) == "-":
        yield sys.stdin.buffer
        return
    try:
        handle = path.open("rb")
    except OSError as error:
        raise UnusableInputError(f"cannot read the export {path}: {error.strerror or error}") from error
    with handle:
        yield handle


def answer_bundle(path: Path, report: BundleReport, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        games = ", ".join(f"{count} {status}" for status, count in sorted(report.games.items())) or "none"
        typer.echo(
            f"Audit bundle {path}: tenant {report.tenant_id}, {report.describe_range()}, "
            f"{report.transactions} transactions, {report.postings} postings, games: {games}, "
            f"{report.rolls} rolls recomputed"
        )
        typer.echo(f"  checks         {', '.join(report.checks)}")
        for chain in report.extra_beacon_chains:
            typer.echo(f"  beacon         {also_trusted(chain)}")
        for kind, changes in sorted(report.kind_changes.items()):
            shown = ", ".join(f"{total:+d} {currency}" for currency, total in sorted(changes.items()))
            typer.echo(f"  {kind + ' ':<15}{shown}")  # external_funding is wider than the column
        house = ", ".join(f"{total:+d} {c}" for c, total in sorted(report.house_result.items())) or "0"
        typer.echo(f"  house result   {house}")
        for note in report.notes:
            typer.echo(f"  note: {note}")
        for finding in report.findings:
            name = f"{finding.record} {finding.record_id}" if finding.record_id else finding.record
            typer.echo(f"  FAIL  line {finding.line or '-'}  {name}: {finding.problem}")
        verdict = report.verdict
        if verdict is Verdict.VALID:
            typer.echo("VALID")
        elif verdict is Verdict.INVALID:
            typer.echo(f"INVALID: {len(report.findings)} finding(s)")
        else:
            typer.echo(
                f"NOT REVEALED: {len(report.unrevealed_games)} game(s) still in play: {report.unrevealed_games[:5]}"
            )
    raise typer.Exit(_VERDICT_EXIT[report.verdict])


def _print_export_report(path: Path, report: AuditReport) -> None:
    """One chain (all chain 0, as every export before there were chains): its seqs and head hash, as
    before; several: how many, then each chain's seqs, transactions and head hash."""
    chains = report.chains
    if not chains:
        span = "empty"
    elif set(chains) == {0}:
        span = f"seq {report.first_seq}-{report.last_seq}"
    else:
        span = f"{len(chains)} chains"
    typer.echo(
        f"Ledger export {path}: tenant {report.tenant_id}, {span}, "
        f"{report.transactions} transactions, {report.postings} postings"
    )
    if set(chains) <= {0}:
        typer.echo(f"  head hash      {report.head_hash}")
    else:
        for chain, summary in sorted(chains.items()):
            typer.echo(
                f"  chain {chain:<8} seq {summary.first_seq}-{summary.last_seq}, "
                f"{summary.transactions} transactions, head hash {summary.head_hash}"
            )
    for currency, total in sorted(report.trial_balance().items()):
        typer.echo(f"  trial balance  {total} {currency}")
    if report.checkpoint_checked:
        typer.echo("  checkpoint     checked")
    for note in report.notes:
        typer.echo(f"  note: {note}")
    for finding in report.findings:
        where = chain_label(finding.chain, finding.seq) if finding.seq is not None else "-"
        line = f"line {finding.line}" if finding.line is not None else "checkpoint"
        typer.echo(f"  FAIL  {where:>12}  {line:>10}  {finding.problem}")
    typer.echo("VALID" if report.valid else f"INVALID: {len(report.findings)} finding(s)")


@audit_app.command("bundle")
def bundle_command(
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant id.")],
    chain: Annotated[
        int | None,
        typer.Option("--chain", min=0, max=LEDGER_CHAINS - 1, help="Only this chain (default: every chain)."),
    ] = None,
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
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="File to write (default stdout).")
    ] = None,
    progress: Annotated[bool | None, PROGRESS_OPTION] = None,
) -> None:
    """Write an audit bundle: the ledger over the range, every game's proof, checkpoints, key ring. Every
    chain in (chain, seq) order, or one chain (--chain); a seq range without --chain is chain 0's."""
    from pokna.bundles import BundleRange, open_bundle
    from pokna.cli.command_session import command_session, require_tenant
    from pokna.cli.errors import EXIT_USAGE, CommandError
    from pokna.errors import InvalidRequest
    from pokna.service_keys import load_service_keys
    from pokna.settings import get_settings

    span = BundleRange(from_seq, to_seq, utc(from_time), utc(to_time), chain)
    keys = load_service_keys(get_settings())
    with command_session() as session:
        require_tenant(session, tenant)
        try:
            lines = open_bundle(session, keys, tenant, span)
        except InvalidRequest as error:
            option = "--" + str(error.extensions["invalid_params"][0]["name"]).removeprefix("query.").replace(
                "_", "-"
            )
            raise CommandError(f"{option}: {error.detail}", exit_code=EXIT_USAGE) from None
        with output_file(output) as handle:
            StderrProgress(progress).written(lines, handle)


def utc(moment: datetime | None) -> datetime | None:
    """Typer reads a time without a zone; the ledger's times are UTC."""
    from datetime import UTC

    return moment if moment is None or moment.tzinfo is not None else moment.replace(tzinfo=UTC)
