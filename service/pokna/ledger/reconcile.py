"""Reconcile: the books checked against themselves, inside the database.

The triggers make drift impossible short of disabling them; this is the check that would catch it if
someone did (docs/ledger.md, "Invariants").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from psycopg import AsyncConnection

from pokna.ledger.export_aio import export_jsonl
from pokna.tenants.service import tenant_ids_async
from pokna_verify.ledger.check import ExportAudit


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
    chain_problems_not_listed: dict[str, int] = field(default_factory=dict)
    """tenant -> findings past the verifier's first 10,000 (MAX_FINDINGS_KEPT), counted but not listed"""

    @property
    def ok(self) -> bool:
        return not (self.differences or self.unbalanced_transactions or self.chain_problems)


# Every subquery is grouped and joined by tenant too (and filtered by it when one is asked): on Citus
# each shard answers for its own tenants. {tenant} is empty or the filter on the tenant asked.
_BALANCE_DIFFERENCES = """
    SELECT a.id, a.tenant_id, a.balance, coalesce(s.total, 0) AS computed
    FROM account AS a LEFT JOIN (
        SELECT tenant_id, account_id, sum(amount) AS total FROM posting WHERE true {tenant}
        GROUP BY tenant_id, account_id
    ) AS s ON s.tenant_id = a.tenant_id AND s.account_id = a.id
    WHERE a.balance != coalesce(s.total, 0) {a_tenant}
    ORDER BY a.id
"""
_UNBALANCED_TRANSACTIONS = """
    SELECT t.id, t.tenant_id, t.chain, t.seq
    FROM journal_transaction AS t
    LEFT JOIN (
        SELECT tenant_id, transaction_id, count(*) AS found FROM posting WHERE true {tenant}
        GROUP BY tenant_id, transaction_id
    ) AS c ON c.tenant_id = t.tenant_id AND c.transaction_id = t.id
    LEFT JOIN (
        SELECT DISTINCT tenant_id, transaction_id FROM (
            SELECT tenant_id, transaction_id, sum(amount) AS total FROM posting WHERE true {tenant}
            GROUP BY tenant_id, transaction_id, currency
        ) AS per_currency WHERE total != 0
    ) AS o ON o.tenant_id = t.tenant_id AND o.transaction_id = t.id
    WHERE (o.transaction_id IS NOT NULL OR coalesce(c.found, 0) != t.posting_count) {t_tenant}
    ORDER BY t.tenant_id, t.chain, t.seq
"""


def _for(statement: str, tenant_id: str | None) -> str:
    def only(alias: str) -> str:
        return "" if tenant_id is None else f"AND {alias}tenant_id = %(tenant_id)s"

    return statement.format(tenant=only(""), a_tenant=only("a."), t_tenant=only("t."))


async def reconcile(
    connection: AsyncConnection[Any], tenant_id: str | None = None, *, check_chain: bool = False
) -> ReconcileReport:
    """Compare every stored balance with the sum of its postings, find every transaction that does not
    balance or lacks postings, and optionally re-verify each hash chain as an auditor would, from its
    JSONL export. One transaction throughout: each export stops at the heads it reads first."""
    params = {"tenant_id": tenant_id}
    async with connection.transaction():
        found = await connection.execute(_for(_BALANCE_DIFFERENCES, tenant_id), params)
        differences = [
            BalanceDifference(account, tenant, int(stored), int(computed))
            for account, tenant, stored, computed in await found.fetchall()
        ]
        found = await connection.execute(_for(_UNBALANCED_TRANSACTIONS, tenant_id), params)
        unbalanced = [
            (tenant, int(chain), int(seq), transaction)
            for transaction, tenant, chain, seq in await found.fetchall()
        ]
        problems: list[tuple[str, str]] = []
        not_listed: dict[str, int] = {}
        if check_chain:
            # Every tenant from `tenant`, a reference table: on a distributed database every node has it.
            tenants = [tenant_id] if tenant_id is not None else await tenant_ids_async(connection)
            for tenant in tenants:
                audit = ExportAudit(None, None)
                number = 0
                async for line in export_jsonl(connection, tenant, None, None, None):
                    number += 1
                    audit.check(number, line)
                findings = audit.finish().findings
                problems.extend((tenant, finding.problem) for finding in findings)
                if findings.dropped:
                    not_listed[tenant] = findings.dropped
    return ReconcileReport(differences, unbalanced, problems, not_listed)
