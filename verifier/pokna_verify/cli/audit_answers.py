"""What `pokna-verify audit` (and `pokna audit verify`) prints of a checked ledger export or audit bundle, as
text or JSON, and the exit code each verdict answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pokna_verify.bundle.report import BundleReport, Verdict
from pokna_verify.cli.beacon_chains import also_trusted
from pokna_verify.cli.exit_codes import EXIT_INVALID, EXIT_NOT_REVEALED, EXIT_VALID
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
    print(
        f"Audit bundle {path}: tenant {report.tenant_id}, {report.describe_range()}, "
        f"{report.transactions} transactions, {report.postings} postings, games: {games}, "
        f"{report.rolls} rolls recomputed"
    )
    print(f"  checks         {', '.join(report.checks)}")
    for chain in report.extra_beacon_chains:
        print(f"  beacon         {also_trusted(chain)}")
    for kind, changes in sorted(report.kind_changes.items()):
        shown = ", ".join(f"{total:+d} {currency}" for currency, total in sorted(changes.items()))
        print(f"  {kind + ' ':<15}{shown}")  # external_funding is wider than the column
    house = ", ".join(f"{total:+d} {c}" for c, total in sorted(report.house_result.items())) or "0"
    print(f"  house result   {house}")
    for note in report.notes:
        print(f"  note: {note}")
    for finding in report.findings:
        name = f"{finding.record} {finding.record_id}" if finding.record_id else finding.record
        print(f"  FAIL  line {finding.line or '-'}  {name}: {finding.problem}")
    _not_listed(report.findings)
    verdict = report.verdict
    if verdict is Verdict.VALID:
        print("VALID")
    elif verdict is Verdict.INVALID:
        print(f"INVALID: {report.findings.total} finding(s)")
    else:
        print(
            f"NOT REVEALED: {len(report.unrevealed_games)} game(s) still in play: {report.unrevealed_games[:5]}"
        )
    return BUNDLE_EXIT[verdict]


def answer_export(path: Path, report: AuditReport, as_json: bool) -> int:
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        _print_export_report(path, report)
    return EXIT_VALID if report.valid else EXIT_INVALID


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
    print(
        f"Ledger export {path}: tenant {report.tenant_id}, {span}, "
        f"{report.transactions} transactions, {report.postings} postings"
    )
    if set(chains) <= {0}:
        print(f"  head hash      {report.head_hash}")
    else:
        for chain, summary in sorted(chains.items()):
            print(
                f"  chain {chain:<8} seq {summary.first_seq}-{summary.last_seq}, "
                f"{summary.transactions} transactions, head hash {summary.head_hash}"
            )
    for currency, total in sorted(report.trial_balance().items()):
        print(f"  trial balance  {total} {currency}")
    if report.checkpoint_checked:
        print("  checkpoint     checked")
    for note in report.notes:
        print(f"  note: {note}")
    for finding in report.findings:
        where = chain_label(finding.chain, finding.seq) if finding.seq is not None else "-"
        line = f"line {finding.line}" if finding.line is not None else "checkpoint"
        print(f"  FAIL  {where:>12}  {line:>10}  {finding.problem}")
    _not_listed(report.findings)
    print("VALID" if report.valid else f"INVALID: {report.findings.total} finding(s)")


def _not_listed(findings: KeptFindings[Any]) -> None:
    if findings.dropped:
        print(f"  ... and {findings.dropped} more finding(s), not listed: the first {len(findings)} are")
