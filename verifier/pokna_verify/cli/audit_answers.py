"""What `pokna-verify audit` (and `pokna audit verify`) prints of a checked ledger export or audit bundle, as
text or JSON, and the exit code each verdict answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pokna_verify.bundle.report import BundleReport, Verdict
from pokna_verify.cli.beacon_chains import also_trusted
from pokna_verify.cli.exit_codes import EXIT_INVALID, EXIT_NOT_REVEALED, EXIT_PARTLY_VERIFIED, EXIT_VALID
from pokna_verify.cli.terminal import say
from pokna_verify.ledger.chain import chain_label
from pokna_verify.ledger.findings import AuditReport, KeptFindings

BUNDLE_EXIT = {
    Verdict.VALID: EXIT_VALID,
    Verdict.INVALID: EXIT_INVALID,
    Verdict.UNREVEALED: EXIT_NOT_REVEALED,
}


def answer_bundle(path: Path, report: BundleReport, as_json: bool) -> int:
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
        return BUNDLE_EXIT[report.verdict]
    games = ", ".join(f"{count} {status}" for status, count in sorted(report.games.items())) or "none"
    say(
        f"Audit bundle {path}: tenant {report.tenant_id}, {report.describe_range()}, "
        f"{report.transactions} transactions, {report.postings} postings, games: {games}, "
        f"{report.rolls} rolls recomputed"
    )
    say(f"  checks         {', '.join(report.checks)}")
    for chain in report.extra_beacon_chains:
        say(f"  beacon         {also_trusted(chain)}")
    for kind, changes in sorted(report.kind_changes.items()):
        shown = ", ".join(f"{total:+d} {currency}" for currency, total in sorted(changes.items()))
        say(f"  {kind + ' ':<15}{shown}")  # external_funding is wider than the column
    house = ", ".join(f"{total:+d} {c}" for c, total in sorted(report.house_result.items())) or "0"
    say(f"  house result   {house}")
    for note in report.notes:
        say(f"  note: {note}")
    for finding in report.findings:
        name = f"{finding.record} {finding.record_id}" if finding.record_id else finding.record
        say(f"  FAIL  line {finding.line or '-'}  {name}: {finding.problem}")
    _not_listed(report.findings)
    verdict = report.verdict
    if verdict is Verdict.VALID:
        say("VALID")
    elif verdict is Verdict.INVALID:
        say(f"INVALID: {report.findings.total} finding(s)")
    else:
        say(
            f"NOT REVEALED: {len(report.unrevealed_games)} game(s) still in play: {report.unrevealed_games[:5]}"
        )
    return BUNDLE_EXIT[verdict]


def answer_export(path: Path, report: AuditReport, as_json: bool) -> int:
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        _print_export_report(path, report)
    return {"valid": EXIT_VALID, "invalid": EXIT_INVALID, "partly_verified": EXIT_PARTLY_VERIFIED}[
        report.verdict
    ]


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
    say(
        f"Ledger export {path}: tenant {report.tenant_id}, {span}, "
        f"{report.transactions} transactions, {report.postings} postings"
    )
    if set(chains) <= {0}:
        say(f"  head hash      {report.head_hash}")
    else:
        for chain, summary in sorted(chains.items()):
            say(
                f"  chain {chain:<8} seq {summary.first_seq}-{summary.last_seq}, "
                f"{summary.transactions} transactions, head hash {summary.head_hash}"
            )
    for currency, total in sorted(report.trial_balance().items()):
        say(f"  trial balance  {total} {currency}")
    if report.checkpoint_checked:
        say("  checkpoint     checked")
    for note in report.notes:
        say(f"  note: {note}")
    for finding in report.findings:
        where = chain_label(finding.chain, finding.seq) if finding.seq is not None else "-"
        line = f"line {finding.line}" if finding.line is not None else "checkpoint"
        say(f"  FAIL  {where:>12}  {line:>10}  {finding.problem}")
    _not_listed(report.findings)
    if report.verdict == "partly_verified":
        say(
            "PARTLY VERIFIED: nothing failed, but the checkpoint's signature was not checked (give --public-key or --keys)"
        )
    else:
        say("VALID" if report.valid else f"INVALID: {report.findings.total} finding(s)")


def _not_listed(findings: KeptFindings[Any]) -> None:
    if findings.dropped:
        say(f"  ... and {findings.dropped} more finding(s), not listed: the first {len(findings)} are")
