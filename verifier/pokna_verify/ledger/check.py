"""Offline audit of a JSONL ledger export: the rules. Pure: no database, no network, no trust in the service.

A tenant's journal is LEDGER_CHAINS hash chains (pokna_verify.ledger.chain); a line names its chain (`chain`,
none on an export from before chains: chain 0), and the chains' lines may be interleaved in any way that
keeps each chain's in order. Line by line it recomputes each transaction's hash from its fields, checks
the seq is the next one on its chain and prev_hash is the hash of the chain's line before, checks the
postings balance per currency, and adds them up, over every chain, into every account's balance and a
trial balance. Any edited, dropped, reordered or inserted line shows up as a finding naming its seq
(`chain 3 seq 12` off chain 0). A consistent rewrite of a chain's whole tail (every hash recomputed) is
caught only by a signed checkpoint: the export must contain each chain's head it pins, with its hash.

Large exports are checked by several processes at once (pokna_verify.ledger.scan); the rules, and so the
findings and their wording, are these.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from pokna_verify.bounded_input import InputLimitError, loads, on_line
from pokna_verify.crypto.errors import NotCanonicalizableError
from pokna_verify.invariant import of_type
from pokna_verify.ledger.chain import GENESIS_HASH, LEDGER_CHAINS, chain_label, line_hash
from pokna_verify.ledger.checkpoint_check import (
    CHECKPOINT_TYPE,
    UnusableCheckpoint,
    check_pinned,
    checkpoint_target,
)
from pokna_verify.ledger.findings import (
    AuditReport,
    BlockSummary,
    ChainSpan,
    ChainSummary,
    Finding,
    is_chain,
    is_int,
)

__all__ = [
    "CHECKPOINT_TYPE",
    "AuditReport",
    "BlockSummary",
    "ChainSpan",
    "ChainSummary",
    "ExportAudit",
    "Finding",
    "UnusableCheckpoint",
    "is_int",
    "shape_problem",
    "verify_export",
]

_STRING_FIELDS = ("id", "tenant_id", "kind", "created_at", "prev_hash", "hash")
_ABSENT = object()


def verify_export(
    lines: Iterable[str | bytes],
    *,
    checkpoint: Mapping[str, Any] | None = None,
    public_key: Ed25519PublicKey | None = None,
) -> AuditReport:
    """Verify an export. With a checkpoint (and the key to check its signature) also pin its heads."""
    audit = ExportAudit(checkpoint, public_key)
    for number, raw in enumerate(lines, start=1):
        audit.check(number, raw)
    return audit.finish()


def _seqs_label(chain: int, first: int, last: int) -> str:
    return f"seqs {first}-{last}" if chain == 0 else f"chain {chain} seqs {first}-{last}"


class ExportAudit:
    """The sequential verification: one line after the other, each judged against the lines before it on
    its chain, or a whole block of lines that passed every check on its own (continue_with).

    The chains of the export may come in any interleaving: each line continues its own chain
    (report.chains), so only the order of the lines within one chain matters."""

    def __init__(self, checkpoint: Mapping[str, Any] | None, public_key: Ed25519PublicKey | None) -> None:
        self.report = AuditReport()
        self.pinned = checkpoint_target(checkpoint, public_key, self.report)
        self.seen_hashes: dict[int, str] = {}  # per chain: the export's hash at the checkpoint's seq
        self.last: tuple[int, int] | None = None  # (chain, seq) of the last line taken in

    def check(self, number: int, raw: str | bytes) -> None:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            return
        line = self._parse(text, number)
        if line is not None:
            self.check_parsed(number, line)

    def _parse(self, text: str, number: int) -> dict[str, Any] | None:
        report = self.report
        where = f"after {chain_label(*self.last)}" if self.last is not None else "at the start"
        try:
            line = loads(text)
        except InputLimitError as error:  # not a finding: nothing was judged (pokna_verify.bounded_input)
            raise on_line(number, error) from None
        except json.JSONDecodeError as error:
            report.findings.append(Finding(number, None, f"line {number} ({where}) is not JSON: {error.msg}"))
            return None
        except ValueError as error:  # any other refusal of the decoder's
            report.findings.append(Finding(number, None, f"line {number} ({where}) cannot be read: {error}"))
            return None
        problem = shape_problem(line)
        if problem is not None:
            seq = line.get("seq") if isinstance(line, dict) and is_int(line.get("seq")) else None
            chain = line.get("chain", 0) if isinstance(line, dict) else 0
            report.findings.append(
                Finding(
                    number,
                    seq,
                    f"line {number} ({where}) is malformed: {problem}",
                    chain if is_chain(chain) else 0,
                )
            )
            return None
        return of_type(line, dict, "a line of the shape checked above")

    def check_parsed(self, number: int, line: dict[str, Any]) -> None:
        """A line already read, and shaped like an export line (shape_problem found nothing)."""
        report = self.report
        chain: int = line.get("chain", 0)
        seq: int = line["seq"]
        found = report.findings.append

        if report.tenant_id is None:
            report.tenant_id = line["tenant_id"]
        elif line["tenant_id"] != report.tenant_id:
            tenants = f"{line['tenant_id']}, not {report.tenant_id}"
            _said(report, number, chain, seq, f" belongs to tenant {tenants}")

        head = report.chains.get(chain)
        if head is None:
            if seq == 1 and line["prev_hash"] != GENESIS_HASH:
                _said(report, number, chain, seq, " does not follow the genesis hash")
            elif seq < 1:
                _said(report, number, chain, seq, " is not positive")
            head = report.chains[chain] = ChainSummary(seq, seq, line["hash"])
            if chain == 0:
                report.first_seq = seq
        else:
            expected = head.last_seq + 1
            if seq > expected:
                missing = (
                    chain_label(chain, expected)
                    if seq == expected + 1
                    else _seqs_label(chain, expected, seq - 1)
                )
                found(
                    Finding(
                        number,
                        expected,
                        f"{missing} missing before {chain_label(chain, seq)} (dropped or reordered)",
                        chain,
                    )
                )
            elif seq < expected:
                after = f" appears after {chain_label(chain, head.last_seq)}"
                _said(report, number, chain, seq, f"{after} (reordered, duplicated or inserted)")
            if line["prev_hash"] != head.head_hash:
                before = "the line before" if chain == 0 else "the line before on its chain"
                before += f" ({chain_label(chain, head.last_seq)})"
                _said(report, number, chain, seq, f": prev_hash does not match the hash of {before}")

        try:
            recomputed = line_hash(line)
        except NotCanonicalizableError as error:
            _said(report, number, chain, seq, f" cannot be canonicalized: {error}")
            recomputed = None
        if recomputed is not None and recomputed != line["hash"]:
            _said(report, number, chain, seq, ": hash does not match its contents (the line was edited)")

        _check_postings(line, number, chain, seq, report)
        head.last_seq = seq
        head.head_hash = line["hash"]
        head.transactions += 1
        report.transactions += 1
        if chain == 0:
            report.last_seq = seq
            report.head_hash = line["hash"]
        self.last = (chain, seq)
        if self.pinned is not None:
            target = self.pinned.heads.get(chain)
            if target is not None and target[0] == seq:
                self.seen_hashes[chain] = line["hash"]

    def continue_with(self, block: BlockSummary) -> bool:
        """Take in a checked block when it continues every chain it is on with no finding at its seams."""
        report = self.report
        if block.transactions == 0:
            return True
        if report.tenant_id is not None and block.tenant_id != report.tenant_id:
            return False
        chains = report.chains
        for chain, span in block.chains.items():
            head = chains.get(chain)
            if head is None:
                if span.first_seq < 1 or (span.first_seq == 1 and span.first_prev_hash != GENESIS_HASH):
                    return False
            elif span.first_seq != head.last_seq + 1 or span.first_prev_hash != head.head_hash:
                return False
        known = report.account_currency
        if any(
            known.get(account_id, currency) != currency
            for account_id, currency in block.account_currency.items()
        ):
            return False
        for chain, span in block.chains.items():
            head = chains.get(chain)
            if head is None:
                chains[chain] = ChainSummary(span.first_seq, span.last_seq, span.last_hash, span.transactions)
            else:
                head.last_seq, head.head_hash = span.last_seq, span.last_hash
                head.transactions += span.transactions
        zero = chains.get(0)
        if zero is not None:
            report.first_seq, report.last_seq, report.head_hash = (
                zero.first_seq,
                zero.last_seq,
                zero.head_hash,
            )
        report.tenant_id = block.tenant_id
        for account_id, currency in block.account_currency.items():
            known.setdefault(account_id, currency)
        balances = report.balances
        for account_id, change in block.balance_changes.items():
            balances[account_id] = balances.get(account_id, 0) + change
        report.transactions += block.transactions
        report.postings += block.postings
        self.last = block.last_line
        if self.pinned is not None:
            self.seen_hashes.update(block.pinned_hashes)
        return True

    def finish(self) -> AuditReport:
        report = self.report
        if self.pinned is not None:
            check_pinned(self.pinned, self.seen_hashes, report)
        for chain, head in sorted(report.chains.items()):
            if head.first_seq > 1:
                start = "the export starts" if chain == 0 else f"the export's chain {chain} starts"
                report.notes.append(
                    f"{start} at seq {head.first_seq}: its prev_hash is taken on trust and the "
                    "balances are changes over the exported range"
                )
        for currency, total in sorted(report.trial_balance().items()):
            if total != 0:
                report.findings.append(
                    Finding(None, report.last_seq, f"trial balance is off by {total} {currency}")
                )
        return report


def shape_problem(line: object) -> str | None:
    """Why `line` is not an export line at all, or None."""
    if not isinstance(line, dict):
        return "not a JSON object"
    if not is_int(line.get("seq")):
        return "seq is not an integer"
    if "chain" in line and not is_chain(line["chain"]):
        return f"chain is not an integer from 0 to {LEDGER_CHAINS - 1}"
    for name in _STRING_FIELDS:
        if not isinstance(line.get(name), str):
            return f"{name} is not a string"
    if not isinstance(line.get("reference", _ABSENT), str | None):  # null, but there: it is hashed
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


def _check_postings(line: dict[str, Any], number: int, chain: int, seq: int, report: AuditReport) -> None:
    postings: list[dict[str, Any]] = line["postings"]
    if len(postings) < 2:
        _said(report, number, chain, seq, f" has {len(postings)} posting(s); at least two")
    totals: dict[str, int] = {}
    for posting in postings:
        account_id: str = posting["account_id"]
        amount: int = posting["amount"]
        currency: str = posting["currency"]
        if amount == 0:
            _said(report, number, chain, seq, f" posts zero to {account_id}")
        known = report.account_currency.setdefault(account_id, currency)
        if known != currency:
            _said(report, number, chain, seq, f" posts {currency} to {account_id}, an account in {known}")
        totals[currency] = totals.get(currency, 0) + amount
        report.balances[account_id] = report.balances.get(account_id, 0) + amount
        report.postings += 1
    for currency, total in sorted(totals.items()):
        if total != 0:
            _said(report, number, chain, seq, f" does not balance: off by {total} {currency}")


def _said(report: AuditReport, number: int, chain: int, seq: int, problem: str) -> None:
    report.findings.append(Finding(number, seq, chain_label(chain, seq) + problem, chain))
