"""What a bundle check found: each finding names its record (line, type, id); the verdict; the summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pokna_verify.fairness.beacon import KNOWN_CHAINS, BeaconChain
from pokna_verify.ledger.findings import KeptFindings


class Verdict(StrEnum):
    VALID = "valid"  # every check ran and passed
    INVALID = "invalid"  # at least one finding
    UNREVEALED = "unrevealed"  # no finding, but some games are still in play: their money is not checked yet


@dataclass(frozen=True)
class BundleFinding:
    """One problem, on the record at `line` (1-based), of type `record`, whose id is `record_id`."""

    line: int | None
    record: str
    record_id: str | None
    problem: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "record": self.record, "id": self.record_id, "problem": self.problem}


@dataclass
class BundleReport:
    findings: KeptFindings[BundleFinding] = field(default_factory=KeptFindings)
    notes: list[str] = field(default_factory=list)
    tenant_id: str | None = None
    # Chain 0's range, as the header signs it (null when the bundle is of another chain only).
    from_seq: int | None = None
    to_seq: int | None = None
    # Every chain's range and end links as the header signs them (format 2; empty for format 1).
    chains: list[dict[str, Any]] = field(default_factory=list)
    records: dict[str, int] = field(default_factory=dict)
    transactions: int = 0
    postings: int = 0
    games: dict[str, int] = field(default_factory=dict)  # by status
    rolls: int = 0
    unrevealed_games: list[str] = field(default_factory=list)
    transaction_kinds: dict[str, int] = field(default_factory=dict)
    # The change over the range of every account kind's balances, per currency.
    kind_changes: dict[str, dict[str, int]] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)
    processes: int = 1
    # The drand chains beacon-mode proofs were checked against: quicknet, then any the auditor trusted too.
    beacon_chains: tuple[BeaconChain, ...] = KNOWN_CHAINS

    @property
    def extra_beacon_chains(self) -> tuple[BeaconChain, ...]:
        """The chains trusted besides the known public ones (`--beacon-chain`): the report names each."""
        return tuple(chain for chain in self.beacon_chains if chain not in KNOWN_CHAINS)

    def describe_range(self) -> str:
        """`seq 1-40` (chain 0, or a bundle from before chains), `chain 0 seq 1-40, chain 3 seq 1-12`."""
        if not self.chains:
            return f"seq {self.from_seq}-{self.to_seq}"
        return ", ".join(
            f"chain {entry.get('chain')} seq {entry.get('from_seq')}-{entry.get('to_seq')}"
            for entry in self.chains
        )

    def found(self, line: int | None, record: str, record_id: str | None, problem: str) -> None:
        self.findings.append(BundleFinding(line, record, record_id, problem))

    @property
    def verdict(self) -> Verdict:
        if self.findings:
            return Verdict.INVALID
        return Verdict.UNREVEALED if self.unrevealed_games else Verdict.VALID

    @property
    def house_result(self) -> dict[str, int]:
        """What the operator's accounts (house, and revenue: the rake) gained (positive) or lost over the
        range, per currency."""
        result: dict[str, int] = {}
        for kind in ("house", "revenue"):
            for currency, change in self.kind_changes.get(kind, {}).items():
                result[currency] = result.get(currency, 0) + change
        return result

    def to_json(self) -> dict[str, Any]:
        """`beacon_chains_trusted` (every chain trusted, as `pokna verify --json` lists them) appears only
        when the auditor trusted a chain besides the known public ones."""
        document: dict[str, Any] = {
            "verdict": str(self.verdict),
            "valid": self.verdict is Verdict.VALID,
            "tenant_id": self.tenant_id,
            "from_seq": self.from_seq,
            "to_seq": self.to_seq,
            "chains": self.chains,
            "records": dict(sorted(self.records.items())),
            "transactions": self.transactions,
            "postings": self.postings,
            "games": dict(sorted(self.games.items())),
            "rolls": self.rolls,
            "checks": self.checks,
            "findings": [finding.to_json() for finding in self.findings],
            "notes": self.notes,
            "unrevealed_games": self.unrevealed_games,
            "transaction_kinds": dict(sorted(self.transaction_kinds.items())),
            "account_kinds": {kind: dict(sorted(c.items())) for kind, c in sorted(self.kind_changes.items())},
            "house_result": self.house_result,
        }
        if self.extra_beacon_chains:
            document["beacon_chains_trusted"] = [chain.to_json() for chain in self.beacon_chains]
        self.findings.listed_json(document)
        return document
