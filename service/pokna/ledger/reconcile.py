"""Reconcile: the books checked against themselves, inside the database.

The triggers make drift impossible short of disabling them; this is the check that would catch it if
someone did (docs/ledger.md, "Invariants").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from pokna.ledger import books_repository, repository
from pokna.ledger.export import export_jsonl
from pokna_verify.ledger.check import verify_export


@dataclass(frozen=True)
class BalanceDifference:
    account_id: str
    tenant_id: str
    stored: int
    computed: int


@dataclass(frozen=True)
class ReconcileReport:
    """What reconcile found. `ok` means no drift, no unbalanced transaction and (if checked) a sound chain."""

    differences: list[BalanceDifference]
    unbalanced_transactions: list[tuple[str, int, int, str]] = field(default_factory=list)
    """(tenant, chain, seq, transaction id)"""
    chain_problems: list[tuple[str, str]] = field(default_factory=list)
    """(tenant, the offline verifier's finding, which names the chain and seq)"""

    @property
    def ok(self) -> bool:
        return not (self.differences or self.unbalanced_transactions or self.chain_problems)


def reconcile(
    session: Session, tenant_id: str | None = None, *, check_chain: bool = False
) -> ReconcileReport:
    """Compare every stored balance with the sum of its postings, find every transaction that does not
    balance or lacks postings, and optionally re-verify each hash chain as an auditor would, from its
    JSONL export."""
    differences = [
        BalanceDifference(row.id, row.tenant_id, int(row.balance), int(row.computed))
        for row in books_repository.balance_differences(session, tenant_id)
    ]
    unbalanced = [
        (row.tenant_id, int(row.chain), int(row.seq), row.id)
        for row in books_repository.unbalanced_transactions(session, tenant_id)
    ]
    problems: list[tuple[str, str]] = []
    if check_chain:
        tenants = [tenant_id] if tenant_id is not None else repository.tenant_ids_with_ledgers(session)
        for tenant in tenants:
            report = verify_export(export_jsonl(session, tenant))
            problems.extend((tenant, finding.problem) for finding in report.findings)
    return ReconcileReport(differences, unbalanced, problems)
