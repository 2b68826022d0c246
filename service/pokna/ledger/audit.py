"""Offline audit of a JSONL ledger export. Pure: no database, no network, no trust in the service.

Line by line it recomputes each transaction's hash from its fields (pokna.ledger.chain), checks the seq is
the next one and prev_hash is the previous line's hash, checks the postings balance per currency, and
adds them up into every account's balance and a trial balance. Any edited, dropped, reordered or inserted
line shows up as a finding naming its seq. A consistent rewrite of the whole tail (every hash recomputed)
is caught only by a signed checkpoint: the export must contain the checkpoint's seq with its hash.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from pokna.fairness.errors import NotCanonicalizableError
from pokna.fairness.signing import signature_problem
from pokna.ledger.chain import GENESIS_HASH, document_hash

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
    report = AuditReport()
    chain = _Chain()
    pinned = _checkpoint_target(checkpoint, public_key, report)
    for number, raw in enumerate(lines, start=1):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            continue
        line = _parse(text, number, chain, report)
        if line is None:
            continue
        _check_line(line, number, chain, report)
        if pinned is not None and line["seq"] == pinned[0]:
            chain.seen_hashes[pinned[0]] = line["hash"]
    if pinned is not None:
        _check_pinned(pinned, chain, report)
    if report.first_seq is not None and report.first_seq > 1:
        report.notes.append(
            f"the export starts at seq {report.first_seq}: its prev_hash is taken on trust and the balances "
            "are changes over the exported range"
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
    problem = _shape_problem(line)
    if problem is not None:
        seq = line.get("seq") if isinstance(line, dict) and _is_int(line.get("seq")) else None
        report.findings.append(Finding(number, seq, f"line {number} ({where}) is malformed: {problem}"))
        return None
    assert isinstance(line, dict)
    return line


def _shape_problem(line: object) -> str | None:
    if not isinstance(line, dict):
        return "not a JSON object"
    if not _is_int(line.get("seq")):
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
        if not _is_int(posting.get("amount")):
            return f"postings[{index}].amount is not an integer"
    return None


def _is_int(value: object) -> bool:
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
        recomputed = document_hash(line)
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


# --- checkpoints -----------------------------------------------------------------------------------------


def _checkpoint_target(
    checkpoint: Mapping[str, Any] | None, public_key: Ed25519PublicKey | None, report: AuditReport
) -> tuple[int, str, str] | None:
    """(seq, hash, tenant_id) the export must contain; a bad signature is a finding."""
    if checkpoint is None:
        return None
    seq, hash_, tenant_id = checkpoint.get("seq"), checkpoint.get("hash"), checkpoint.get("tenant_id")
    if checkpoint.get("type") != CHECKPOINT_TYPE or not _is_int(seq) or not isinstance(hash_, str):
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
