"""Offline audit of a JSONL ledger export: the rules. Pure: no database, no network, no trust in the service.

Line by line it recomputes each transaction's hash from its fields (pokna.ledger.chain), checks the seq is
the next one and prev_hash is the previous line's hash, checks the postings balance per currency, and
adds them up into every account's balance and a trial balance. Any edited, dropped, reordered or inserted
line shows up as a finding naming its seq. A consistent rewrite of the whole tail (every hash recomputed)
is caught only by a signed checkpoint: the export must contain the checkpoint's seq with its hash.

Large exports are checked by several processes at once (pokna.ledger.audit_scan); the rules, and so the
findings and their wording, are these.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from pokna.crypto.errors import NotCanonicalizableError
from pokna.crypto.signing import signature_problem
from pokna.ledger.chain import GENESIS_HASH, line_hash

CHECKPOINT_TYPE = "pokna.ledger.checkpoint"
_STRING_FIELDS = ("id", "tenant_id", "kind", "created_at", "prev_hash", "hash")


@dataclass(frozen=True)
class Finding:
    """One problem: the line it is on (1-based; None for the checkpoint) and the seq it concerns."""

    line: int | None
    seq: int | None
    problem: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "seq": self.seq, "problem": self.problem}


@dataclass
class AuditReport:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tenant_id: str | None = None
    transactions: int = 0
    postings: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    head_hash: str | None = None
    balances: dict[str, int] = field(default_factory=dict)
    account_currency: dict[str, str] = field(default_factory=dict)
    checkpoint_checked: bool = False
    # How the work was shared (not part of the report's JSON): processes that parsed and hashed lines, and
    # blocks of lines taken in as checked by a worker rather than checked again line by line here.
    processes: int = 1
    blocks_from_workers: int = 0

    @property
    def valid(self) -> bool:
        return not self.findings

    def trial_balance(self) -> dict[str, int]:
        """Sum of all balances per currency: zero for books that balance."""
        totals: dict[str, int] = {}
        for account_id, balance in self.balances.items():
            currency = self.account_currency[account_id]
            totals[currency] = totals.get(currency, 0) + balance
        return totals

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "tenant_id": self.tenant_id,
            "transactions": self.transactions,
            "postings": self.postings,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "head_hash": self.head_hash,
            "checkpoint_checked": self.checkpoint_checked,
            "findings": [finding.to_json() for finding in self.findings],
            "notes": self.notes,
            "trial_balance": self.trial_balance(),
            "balances": dict(sorted(self.balances.items())),
        }


@dataclass
class _Chain:
    """What the next line must continue from."""

    seq: int | None = None
    hash: str | None = None
    seen_hashes: dict[int, str] = field(default_factory=dict)


class UnusableCheckpoint(ValueError):
    """The checkpoint document is not a checkpoint at all (as opposed to one that fails to verify)."""


def verify_export(
    lines: Iterable[str | bytes],
    *,
    checkpoint: Mapping[str, Any] | None = None,
    public_key: Ed25519PublicKey | None = None,
) -> AuditReport:
    """Verify an export. With a checkpoint (and the key to check its signature) also pin its head."""
    audit = ExportAudit(checkpoint, public_key)
    for number, raw in enumerate(lines, start=1):
        audit.check(number, raw)
    return audit.finish()


class ExportAudit:
    """The sequential verification: one line after the other, each judged against all the lines before it,
    or a whole block of lines that passed every check on its own (continue_with)."""

    def __init__(self, checkpoint: Mapping[str, Any] | None, public_key: Ed25519PublicKey | None) -> None:
        self.report = AuditReport()
        self.chain = _Chain()
        self.pinned = _checkpoint_target(checkpoint, public_key, self.report)

    def check(self, number: int, raw: str | bytes) -> None:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            return
        line = _parse(text, number, self.chain, self.report)
        if line is not None:
            self.check_parsed(number, line)

    def check_parsed(self, number: int, line: dict[str, Any]) -> None:
        """A line already read, and shaped like an export line (shape_problem found nothing)."""
        _check_line(line, number, self.chain, self.report)
        if self.pinned is not None and line["seq"] == self.pinned[0]:
            self.chain.seen_hashes[self.pinned[0]] = line["hash"]

    def continue_with(self, block: BlockSummary) -> bool:
        """Take in a checked block when it continues the chain with no finding at its seam."""
        report, chain = self.report, self.chain
        if block.transactions == 0:
            return True
        if report.tenant_id is not None and block.tenant_id != report.tenant_id:
            return False
        if chain.seq is None:
            if block.first_seq < 1 or (block.first_seq == 1 and block.first_prev_hash != GENESIS_HASH):
                return False
        elif block.first_seq != chain.seq + 1 or block.first_prev_hash != chain.hash:
            return False
        known = report.account_currency
        if any(
            known.get(account_id, currency) != currency
            for account_id, currency in block.account_currency.items()
        ):
            return False
        if chain.seq is None:
            report.first_seq = block.first_seq
        report.tenant_id = block.tenant_id
        for account_id, currency in block.account_currency.items():
            known.setdefault(account_id, currency)
        balances = report.balances
        for account_id, change in block.balance_changes.items():
            balances[account_id] = balances.get(account_id, 0) + change
        report.transactions += block.transactions
        report.postings += block.postings
        report.last_seq = chain.seq = block.last_seq
        report.head_hash = chain.hash = block.last_hash
        if block.pinned_hash is not None and self.pinned is not None:
            chain.seen_hashes[self.pinned[0]] = block.pinned_hash
        return True

    def finish(self) -> AuditReport:
        report = self.report
        if self.pinned is not None:
            _check_pinned(self.pinned, self.chain, report)
        if report.first_seq is not None and report.first_seq > 1:
            report.notes.append(
                f"the export starts at seq {report.first_seq}: its prev_hash is taken on trust and the "
                "balances are changes over the exported range"
            )
        for currency, total in sorted(report.trial_balance().items()):
            if total != 0:
                report.findings.append(
                    Finding(None, report.last_seq, f"trial balance is off by {total} {currency}")
                )
        return report


def _parse(text: str, number: int, chain: _Chain, report: AuditReport) -> dict[str, Any] | None:
    after = chain.seq
    where = f"after seq {after}" if after is not None else "at the start"
    try:
        line = json.loads(text)
    except json.JSONDecodeError as error:
        report.findings.append(Finding(number, None, f"line {number} ({where}) is not JSON: {error.msg}"))
        return None
    except ValueError as error:  # valid JSON Python refuses to read, e.g. an integer of over 4,300 digits
        report.findings.append(Finding(number, None, f"line {number} ({where}) cannot be read: {error}"))
        return None
    problem = shape_problem(line)
    if problem is not None:
        seq = line.get("seq") if isinstance(line, dict) and is_int(line.get("seq")) else None
        report.findings.append(Finding(number, seq, f"line {number} ({where}) is malformed: {problem}"))
        return None
    assert isinstance(line, dict)
    return line


def shape_problem(line: object) -> str | None:
    """Why `line` is not an export line at all, or None."""
    if not isinstance(line, dict):
        return "not a JSON object"
    if not is_int(line.get("seq")):
        return "seq is not an integer"
    for name in _STRING_FIELDS:
        if not isinstance(line.get(name), str):
            return f"{name} is not a string"
    if line.get("reference") is not None and not isinstance(line.get("reference"), str):
        return "reference is neither a string nor null"
    if not isinstance(line.get("metadata"), dict):
        return "metadata is not an object"
    postings = line.get("postings")
    if not isinstance(postings, list):
        return "postings is not a list"
    for index, posting in enumerate(postings):
        if not isinstance(posting, dict):
            return f"postings[{index}] is not an object"
        if not isinstance(posting.get("account_id"), str) or not isinstance(posting.get("currency"), str):
            return f"postings[{index}] lacks a string account_id or currency"
        if not is_int(posting.get("amount")):
            return f"postings[{index}].amount is not an integer"
    return None


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_line(line: dict[str, Any], number: int, chain: _Chain, report: AuditReport) -> None:
    seq: int = line["seq"]
    found = report.findings.append

    if report.tenant_id is None:
        report.tenant_id = line["tenant_id"]
    elif line["tenant_id"] != report.tenant_id:
        found(
            Finding(number, seq, f"seq {seq} belongs to tenant {line['tenant_id']}, not {report.tenant_id}")
        )

    if chain.seq is None:
        report.first_seq = seq
        if seq == 1 and line["prev_hash"] != GENESIS_HASH:
            found(Finding(number, seq, "seq 1 does not follow the genesis hash"))
        elif seq < 1:
            found(Finding(number, seq, f"seq {seq} is not positive"))
    else:
        expected = chain.seq + 1
        if seq > expected:
            missing = f"seq {expected}" if seq == expected + 1 else f"seqs {expected}-{seq - 1}"
            found(Finding(number, expected, f"{missing} missing before seq {seq} (dropped or reordered)"))
        elif seq < expected:
            found(
                Finding(
                    number,
                    seq,
                    f"seq {seq} appears after seq {chain.seq} (reordered, duplicated or inserted)",
                )
            )
        if line["prev_hash"] != chain.hash:
            found(
                Finding(
                    number,
                    seq,
                    f"seq {seq}: prev_hash does not match the hash of the line before (seq {chain.seq})",
                )
            )

    try:
        recomputed = line_hash(line)
    except NotCanonicalizableError as error:
        found(Finding(number, seq, f"seq {seq} cannot be canonicalized: {error}"))
        recomputed = None
    if recomputed is not None and recomputed != line["hash"]:
        found(Finding(number, seq, f"seq {seq}: hash does not match its contents (the line was edited)"))

    _check_postings(line, number, seq, report)
    chain.seq = seq
    chain.hash = line["hash"]
    report.transactions += 1
    report.last_seq = seq
    report.head_hash = line["hash"]


def _check_postings(line: dict[str, Any], number: int, seq: int, report: AuditReport) -> None:
    postings: list[dict[str, Any]] = line["postings"]
    if len(postings) < 2:
        report.findings.append(
            Finding(number, seq, f"seq {seq} has {len(postings)} posting(s); at least two")
        )
    totals: dict[str, int] = {}
    for posting in postings:
        account_id: str = posting["account_id"]
        amount: int = posting["amount"]
        currency: str = posting["currency"]
        if amount == 0:
            report.findings.append(Finding(number, seq, f"seq {seq} posts zero to {account_id}"))
        known = report.account_currency.setdefault(account_id, currency)
        if known != currency:
            report.findings.append(
                Finding(number, seq, f"seq {seq} posts {currency} to {account_id}, an account in {known}")
            )
        totals[currency] = totals.get(currency, 0) + amount
        report.balances[account_id] = report.balances.get(account_id, 0) + amount
        report.postings += 1
    for currency, total in sorted(totals.items()):
        if total != 0:
            report.findings.append(
                Finding(number, seq, f"seq {seq} does not balance: off by {total} {currency}")
            )


@dataclass(frozen=True)
class BlockSummary:
    """A block of lines in which every line passed every check that needs no line outside it: what it
    adds to the report, and its first and last link for the checks across its seams."""

    tenant_id: str | None
    first_seq: int
    first_prev_hash: str
    last_seq: int
    last_hash: str
    transactions: int
    postings: int
    balance_changes: dict[str, int]
    account_currency: dict[str, str]
    pinned_hash: str | None


# --- checkpoints -----------------------------------------------------------------------------------------


def _checkpoint_target(
    checkpoint: Mapping[str, Any] | None, public_key: Ed25519PublicKey | None, report: AuditReport
) -> tuple[int, str, str] | None:
    """(seq, hash, tenant_id) the export must contain; a bad signature is a finding."""
    if checkpoint is None:
        return None
    seq, hash_, tenant_id = checkpoint.get("seq"), checkpoint.get("hash"), checkpoint.get("tenant_id")
    if checkpoint.get("type") != CHECKPOINT_TYPE or not is_int(seq) or not isinstance(hash_, str):
        raise UnusableCheckpoint(
            f"not a ledger checkpoint (type must be {CHECKPOINT_TYPE!r}, with seq and hash)"
        )
    if not isinstance(tenant_id, str):
        raise UnusableCheckpoint("the checkpoint names no tenant")
    assert isinstance(seq, int)
    if public_key is None:
        report.notes.append("no public key given: the checkpoint's signature was not checked")
    else:
        problem = signature_problem(checkpoint, public_key)
        if problem is not None:
            report.findings.append(Finding(None, seq, f"checkpoint signature: {problem}"))
    return seq, hash_, tenant_id


def _check_pinned(pinned: tuple[int, str, str], chain: _Chain, report: AuditReport) -> None:
    seq, hash_, tenant_id = pinned
    report.checkpoint_checked = True
    found = report.findings.append
    if report.tenant_id is not None and tenant_id != report.tenant_id:
        found(
            Finding(None, seq, f"the checkpoint is for tenant {tenant_id}, the export for {report.tenant_id}")
        )
    if seq == 0:
        if hash_ != GENESIS_HASH:
            found(Finding(None, 0, "a checkpoint at seq 0 must carry the genesis hash"))
        return
    if seq in chain.seen_hashes:
        if chain.seen_hashes[seq] != hash_:
            found(
                Finding(
                    None, seq, f"seq {seq}: the hash differs from the signed checkpoint (history rewritten)"
                )
            )
        return
    if report.last_seq is None or seq > report.last_seq:
        found(
            Finding(
                None,
                seq,
                f"the signed checkpoint covers seq {seq} but the export ends at seq {report.last_seq or 0} "
                "(transactions missing from the end)",
            )
        )
    else:
        found(Finding(None, seq, f"the export does not contain the checkpoint's seq {seq}"))
