"""What the offline audit of a ledger export reports (pokna_verify.ledger.check): findings, each chain's summary,
the balances; and what a worker's block of lines adds to it (pokna_verify.ledger.scan). Pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

from pokna_verify.ledger.chain import LEDGER_CHAINS

MAX_FINDINGS_KEPT = 10_000
"""Findings kept, to list; past it they are only counted. A file may hold any number of lines, and a
million broken ones (3 MB of `{}`) held a million findings (over 300 MB) and listed them all."""

_Item = TypeVar("_Item")


class KeptFindings(list[_Item]):
    """The first MAX_FINDINGS_KEPT findings added (append, extend or +=), and how many more were `dropped`:
    a report with any finding is invalid all the same, and says how many it found."""

    dropped: int = 0

    def append(self, finding: _Item) -> None:
        if len(self) < MAX_FINDINGS_KEPT:
            super().append(finding)
        else:
            self.dropped += 1

    def extend(self, findings: Iterable[_Item]) -> None:
        for finding in findings:
            self.append(finding)

    # list's own += extends in C, past append; mypy holds += to list.__add__, which makes another list
    def __iadd__(self, findings: Iterable[_Item]) -> Self:  # type: ignore[override,misc]
        self.extend(findings)
        return self

    @property
    def total(self) -> int:
        return len(self) + self.dropped

    def listed_json(self, document: dict[str, Any]) -> None:
        """`findings_not_listed` in a report's JSON, only when some were dropped."""
        if self.dropped:
            document["findings_not_listed"] = self.dropped


@dataclass(frozen=True)
class Finding:
    """One problem: the line it is on (1-based; None for the checkpoint), and the chain and seq it concerns."""

    line: int | None
    seq: int | None
    problem: str
    chain: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "chain": self.chain, "seq": self.seq, "problem": self.problem}


@dataclass
class ChainSummary:
    """One hash chain of the export as far as it was read: its first and last seq, the hash of its last
    line (what the chain's next line must follow) and how many of the export's transactions are on it."""

    first_seq: int
    last_seq: int
    head_hash: str
    transactions: int = 0

    def to_json(self, chain: int) -> dict[str, Any]:
        return {
            "chain": chain,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "head_hash": self.head_hash,
            "transactions": self.transactions,
        }


@dataclass
class AuditReport:
    findings: KeptFindings[Finding] = field(default_factory=KeptFindings)
    notes: list[str] = field(default_factory=list)
    tenant_id: str | None = None
    transactions: int = 0
    postings: int = 0
    # Chain 0's, as before there were chains (an export without chains is all chain 0); every chain's,
    # chain 0 included, is in `chains`.
    first_seq: int | None = None
    last_seq: int | None = None
    head_hash: str | None = None
    chains: dict[int, ChainSummary] = field(default_factory=dict)
    balances: dict[str, int] = field(default_factory=dict)
    account_currency: dict[str, str] = field(default_factory=dict)
    checkpoint_checked: bool = False
    # A --checkpoint whose heads were checked but not its signature (no key): not a pass, as a proof
    # whose signature nobody checked is none; the verdict is then partly verified.
    checkpoint_signature_unchecked: bool = False
    # How the work was shared (not part of the report's JSON): processes that parsed and hashed lines, and
    # blocks of lines taken in as checked by a worker rather than checked again line by line here.
    processes: int = 1
    blocks_from_workers: int = 0

    @property
    def valid(self) -> bool:
        return not self.findings

    @property
    def verdict(self) -> str:
        """`valid` only when every check asked for ran and passed; `partly_verified` when nothing failed
        but a checkpoint's signature could not be checked."""
        if self.findings:
            return "invalid"
        return "partly_verified" if self.checkpoint_signature_unchecked else "valid"

    def trial_balance(self) -> dict[str, int]:
        """Sum of all balances per currency, over every chain: zero for books that balance."""
        totals: dict[str, int] = {}
        for account_id, balance in self.balances.items():
            currency = self.account_currency[account_id]
            totals[currency] = totals.get(currency, 0) + balance
        return totals

    def to_json(self) -> dict[str, Any]:
        document = {
            "valid": None if self.verdict == "partly_verified" else self.valid,
            "verdict": self.verdict,
            "tenant_id": self.tenant_id,
            "transactions": self.transactions,
            "postings": self.postings,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "head_hash": self.head_hash,
            "chains": [summary.to_json(chain) for chain, summary in sorted(self.chains.items())],
            "checkpoint_checked": self.checkpoint_checked,
            "findings": [finding.to_json() for finding in self.findings],
            "notes": self.notes,
            "trial_balance": self.trial_balance(),
            "balances": dict(sorted(self.balances.items())),
        }
        self.findings.listed_json(document)
        return document


@dataclass(frozen=True)
class ChainSpan:
    """The lines of one chain within a block: they follow each other on it, from the first to the last."""

    first_seq: int
    first_prev_hash: str
    last_seq: int
    last_hash: str
    transactions: int


@dataclass(frozen=True)
class BlockSummary:
    """A block of lines in which every line passed every check that needs no line outside it: what it
    adds to the report, and per chain its first and last link for the checks across its seams."""

    tenant_id: str | None
    chains: dict[int, ChainSpan]
    last_line: tuple[int, int] | None  # (chain, seq) of the block's last line
    transactions: int
    postings: int
    balance_changes: dict[str, int]
    account_currency: dict[str, str]
    pinned_hashes: dict[int, str]  # per chain: the hash of the line at the checkpoint's seq, in this block


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_chain(value: object) -> bool:
    """A chain number: an integer (not a boolean) from 0 to LEDGER_CHAINS - 1."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < LEDGER_CHAINS
