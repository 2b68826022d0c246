"""`pokna audit report BUNDLE --html FILE [--json FILE] [--from T] [--to T]`: a period's RTP and RNG report,
made in the same pass that verifies the bundle (pokna_verify.bundle.scan with pokna_verify.bundle.play_tally).

An INVALID bundle gets no report: the findings are printed as `pokna audit verify` prints them, nothing is
written, exit 1. A bundle with games still in play is reported without them (they are counted on the page).
Answers: 0 report written, 1 INVALID, 2 unusable input, a file it cannot write or a wrong option (`-` for
--html or --json among them: the report goes to files, stdout has its summary).

SciPy and Matplotlib are imported only here, once the bundle is verified: `pokna audit verify` never pays
for them, nor do the worker processes that read the bundle.
"""

from __future__ import annotations

import importlib.util
import json
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from pokna.cli.audit import audit_app, utc
from pokna.cli.ledger import PROGRESS_OPTION, whole_file
from pokna_verify.bounded_input import InputLimitError
from pokna_verify.bundle.records import is_bundle
from pokna_verify.bundle.report import Verdict
from pokna_verify.cli import usage
from pokna_verify.cli.audit_answers import answer_bundle
from pokna_verify.cli.audit_run import read_keys
from pokna_verify.cli.audit_stream import first_line, named, open_source, rewound
from pokna_verify.cli.beacon_chains import trusted_chains
from pokna_verify.cli.exit_codes import EXIT_UNUSABLE
from pokna_verify.cli.input_files import UnusableInputError
from pokna_verify.cli.progress import StderrProgress
from pokna_verify.cli.terminal import printable
from pokna_verify.crypto.errors import CryptoError
from pokna_verify.fairness.errors import FairnessError
from pokna_verify.ledger.scan import usable_cores


@audit_app.command("report")
def report_command(
    source: Annotated[
        Path,
        typer.Argument(
            metavar="BUNDLE.jsonl", help="An audit bundle (`pokna audit bundle`), or - for stdin."
        ),
    ],
    html: Annotated[
        Path, typer.Option("--html", metavar="FILE", help="Write the report's page to this file (not -).")
    ],
    json_file: Annotated[
        Path | None,
        typer.Option(
            "--json", metavar="FILE", help="Write every figure of the page to this file (not -), as JSON."
        ),
    ] = None,
    settled_from: Annotated[
        datetime | None,
        typer.Option(
            "--from", help="Games whose pot was paid out at or after this time (UTC unless a zone)."
        ),
    ] = None,
    settled_to: Annotated[
        datetime | None, typer.Option("--to", help="... and at or before this time (UTC unless a zone).")
    ] = None,
    keys: Annotated[str | None, typer.Option("--keys", help=usage.AUDIT_KEYS)] = None,
    beacon_chain: Annotated[
        list[Path] | None, typer.Option("--beacon-chain", metavar="FILE", help=usage.BEACON_CHAIN)
    ] = None,
    processes: Annotated[int | None, typer.Option("--processes", min=1, help=usage.PROCESSES)] = None,
    progress: Annotated[bool | None, PROGRESS_OPTION] = None,
) -> None:
    """Verify an audit bundle and, if it is valid, report RTP per table and side against the exact odds and
    the RNG's output (faces, colours, consecutive rolls, runs) over the period, as HTML (and JSON)."""
    from pokna.cli.errors import EXIT_USAGE, CommandError
    from pokna_verify.bundle.play_tally import PlayTally
    from pokna_verify.bundle.scan import verify_bundle_stream

    for option, target in (("--html", html), ("--json", json_file)):
        if target is not None and str(target) == "-":  # `-` is stdin for the bundle, not stdout here
            raise typer.BadParameter(
                "- would be a file named -: the report is written to files only (stdout has its summary); "
                "give a file name",
                param_hint=f"'{option}'",
            )
    missing = [name for name in ("scipy", "matplotlib") if importlib.util.find_spec(name) is None]
    if missing:
        raise CommandError(
            f"the report needs SciPy and Matplotlib ({', '.join(missing)} not installed): pip install 'pokna[report]'"
        )
    start, end = utc(settled_from), utc(settled_to)
    if start is not None and end is not None and start > end:
        raise CommandError("--to: the period ends before it starts (--from)", exit_code=EXIT_USAGE)
    tally = PlayTally(start, end)
    try:
        ring = read_keys(keys)
        chains = trusted_chains(beacon_chain or [])
        with open_source(source) as opened:
            first = first_line(opened)
            if not is_bundle(first):
                raise UnusableInputError(
                    f"{source} is not an audit bundle (its first line is no pokna.audit.bundle header): "
                    "a report needs every game's proof, which only a bundle holds"
                )
            shown = StderrProgress(progress)
            try:
                bundle = verify_bundle_stream(
                    rewound(opened, first),
                    keys=ring,
                    beacon_chains=chains,
                    processes=processes or usable_cores(),
                    progress=lambda lines, _: shown.show(f"{lines:,} records read"),
                    play=tally,
                )
            finally:
                shown.done()
        if bundle.transactions == 0 and bundle.verdict is not Verdict.INVALID:
            raise UnusableInputError(f"the bundle {source} holds no transactions: there is nothing to report")
    except (UnusableInputError, InputLimitError, FairnessError, CryptoError) as error:
        said = f"{named(source)}: {error}" if isinstance(error, InputLimitError) else str(error)
        typer.echo(f"UNUSABLE INPUT: {said}", err=True)
        raise typer.Exit(EXIT_UNUSABLE) from error
    if bundle.verdict is Verdict.INVALID:
        typer.echo(
            f"no report: the bundle is INVALID, so its figures prove nothing ({html} not written)", err=True
        )
        raise typer.Exit(answer_bundle(source, bundle, as_json=False))
    # Only now: the workers that read the bundle were forked without them (a third of the memory).
    from pokna.audit.period_report import period_document
    from pokna.report_page.page import render_page

    document = period_document(tally, bundle, source=source.name, settled_from=start, settled_to=end)
    _write(html, render_page(document), "--html")
    if json_file is not None:
        _write(json_file, json.dumps(document, indent=2) + "\n", "--json")
    written = f"{html}" + (f" and {json_file}" if json_file is not None else "")
    for line in summary_lines(document, bundle.verdict, bundle.notes, written):
        typer.echo(line)


def summary_lines(document: dict[str, Any], verdict: Verdict, notes: list[str], written: str) -> list[str]:
    """What the command says of a report it wrote. A valid bundle is still the file under check: its notes
    and its currencies (in a table's name) reach the terminal escaped, as the verifiers print them
    (pokna_verify.cli.terminal), or ESC [8m or a newline and a fake line would pass for pokna's own."""
    testing = document["testing"]
    lines = [
        f"Report of {document['period']['games']:,} games, {document['rng']['rolls']:,} rolls "
        f"(bundle {verdict.value.upper()}): {written}"
    ]
    lines += [f"  note: {note}" for note in notes]
    lines.append(
        f"  {testing['tests_run']} tests, each flagged below p = {testing['per_test_level']:.2g} "
        f"(Bonferroni, {testing['family_alpha']} for the report): "
        + ("nothing flagged" if not testing["flags"] else f"{testing['flags']} FLAGGED")
    )
    lines += [
        f"  FLAGGED  {test['title']}: p = {test['p_value']:.3g}"
        for test in document["tests"]
        if test["flagged"]
    ]
    lines += [
        f"  FLAGGED  {table['name']}: the rake of {table['rake']['games_off_terms']} game(s) differs from the terms"
        for table in document["rtp"]["tables"]
        if table["rake"]["flagged"]
    ]
    return [printable(line) for line in lines]


def _write(path: Path, text: str, option: str) -> None:
    """A file the command cannot write (a full disk, a missing directory, no permission) is output it cannot
    use, as unusable as a bad input and answered the same (exit 2, naming it and the OS's reason): not a
    bug in pokna, and not an INVALID bundle (exit 1) (issue 46, L6)."""
    hint = f"give {option} a file on a disk with room, in a directory you may write to"
    with whole_file(path, hint, EXIT_UNUSABLE) as handle:  # a cut leaves no page that passes for whole
        handle.write(text)
