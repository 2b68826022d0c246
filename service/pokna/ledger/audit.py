"""Offline audit of a JSONL ledger export. Pure: no database, no network, no trust in the service.

Line by line it recomputes each transaction's hash from its fields (pokna.ledger.chain), checks the seq is
the next one and prev_hash is the previous line's hash, checks the postings balance per currency, and
adds them up into every account's balance and a trial balance. Any edited, dropped, reordered or inserted
line shows up as a finding naming its seq. A consistent rewrite of the whole tail (every hash recomputed)
is caught only by a signed checkpoint: the export must contain the checkpoint's seq with its hash.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import signal
import stat
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext
from typing import Any, BinaryIO

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
    audit = _Audit(checkpoint, public_key)
    for number, raw in enumerate(lines, start=1):
        audit.check(number, raw)
    return audit.finish()


class _Audit:
    """The sequential verification: one line after the other, each judged against all the lines before it."""

    def __init__(self, checkpoint: Mapping[str, Any] | None, public_key: Ed25519PublicKey | None) -> None:
        self.report = AuditReport()
        self.chain = _Chain()
        self.pinned = _checkpoint_target(checkpoint, public_key, self.report)

    def check(self, number: int, raw: str | bytes) -> None:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            return
        line = _parse(text, number, self.chain, self.report)
        if line is None:
            return
        _check_line(line, number, self.chain, self.report)
        if self.pinned is not None and line["seq"] == self.pinned[0]:
            self.chain.seen_hashes[self.pinned[0]] = line["hash"]

    def check_block(self, block: bytes, number: int) -> int:
        """Check every line of `block`, the first being line `number`; the number of the line after it."""
        for offset, raw in enumerate(_block_lines(block)):
            self.check(number + offset, raw)
        return number + _line_count(block)

    def settle(self, block: bytes, number: int, pending: Future[_BlockSummary | None] | None) -> None:
        """`pending` is None when no worker could take the block (the pool broke): it is checked here."""
        try:
            summary = None if pending is None else pending.result()
        except BrokenProcessPool:  # a worker died (killed, out of memory): nothing is lost, only time
            summary = None
        if summary is not None and self.continue_with(summary):
            self.report.blocks_from_workers += 1
        else:
            self.check_block(block, number)

    def continue_with(self, block: _BlockSummary) -> bool:
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


# --- large exports: lines hashed in parallel ------------------------------------------------------------

_BLOCK_BYTES = 1 << 20
_POOL_AFTER_BLOCKS = 4


def verify_export_stream(
    stream: BinaryIO,
    *,
    checkpoint: Mapping[str, Any] | None = None,
    public_key: Ed25519PublicKey | None = None,
    processes: int | None = None,
) -> AuditReport:
    """verify_export of a file or pipe, with the same report, parsing and hashing on every core when large.

    Parsing and hashing each line is nearly all the work and needs nothing from the lines before it, so
    worker processes take blocks of ~1 MiB of whole lines and check each block on its own: every line
    well-formed, every hash right, seqs and prev_hashes continuous, every transaction balanced. A block
    that passes comes back as a summary (its first and last link, its balance changes); the chain and the
    balances are stitched here, in order. A block that fails, or does not continue the chain before it,
    is verified again here line by line, exactly as verify_export does, so every finding and its wording
    are the same. At most two blocks per process are in flight: memory stays flat at any size.
    """
    audit = _Audit(checkpoint, public_key)
    blocks = _blocks(stream)
    head = list(itertools.islice(blocks, _POOL_AFTER_BLOCKS))
    count = processes if processes is not None else _usable_cores()
    if count < 2 or len(head) < _POOL_AFTER_BLOCKS:
        number = 1
        for block in itertools.chain(head, blocks):
            number = audit.check_block(block, number)
        return audit.finish()
    pinned_seq = audit.pinned[0] if audit.pinned is not None else None
    in_flight: deque[tuple[bytes, int, Future[_BlockSummary | None] | None]] = deque()
    number = 1
    context = _pool_context()
    # Forked workers share a regular file's descriptor: they read their block themselves, by offset,
    # rather than have it copied to them through a pipe.
    fileno = _regular_file(stream) if context.get_start_method() == "fork" else None
    offset = stream.tell() - sum(map(len, head)) if fileno is not None else 0
    with _worker_pool(context, count) as pool:
        for block in itertools.chain(head, blocks):
            task: Future[_BlockSummary | None] | None
            try:
                task = (
                    pool.submit(_summarize_file_block, fileno, offset, len(block), pinned_seq)
                    if fileno is not None
                    else pool.submit(_summarize_block, block, pinned_seq)
                )
            except BrokenProcessPool:
                task = None
            in_flight.append((block, number, task))
            number += _line_count(block)
            offset += len(block)
            if len(in_flight) >= 2 * count:
                audit.settle(*in_flight.popleft())
        while in_flight:
            audit.settle(*in_flight.popleft())
    audit.report.processes = count
    return audit.finish()


def _usable_cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


@contextmanager
def _worker_pool(context: BaseContext, count: int) -> Iterator[ProcessPoolExecutor]:
    """Workers that exit when the work is done. A ProcessPoolExecutor rather than a multiprocessing Pool:
    when a worker dies its tasks fail with BrokenProcessPool instead of waiting forever; abandoned work
    is cancelled."""
    pool = ProcessPoolExecutor(count, mp_context=context, initializer=_default_signals)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _pool_context() -> BaseContext:
    """fork where there is one: the workers start in milliseconds, with everything already imported."""
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _default_signals() -> None:
    """A forked worker inherits its parent's handlers; the parent's clean-up on SIGTERM is not the worker's."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _regular_file(stream: BinaryIO) -> int | None:
    try:
        fileno = stream.fileno()
        return fileno if stat.S_ISREG(os.fstat(fileno).st_mode) and stream.seekable() else None
    except (OSError, ValueError):
        return None


def _blocks(stream: BinaryIO) -> Iterator[bytes]:
    """Whole lines, about _BLOCK_BYTES at a time."""
    while block := stream.read(_BLOCK_BYTES):
        if not block.endswith(b"\n"):
            block += stream.readline()
        yield block


def _block_lines(block: bytes) -> list[bytes]:
    """The lines of a block as iterating over the file gives them: split after each newline, kept."""
    parts = block.split(b"\n")
    last = parts.pop()
    lines = [part + b"\n" for part in parts]
    if last:
        lines.append(last)
    return lines


def _line_count(block: bytes) -> int:
    return block.count(b"\n") + (0 if block.endswith(b"\n") else 1)


@dataclass(frozen=True)
class _BlockSummary:
    """A block in which every line passed every check that needs no line outside it."""

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


def _summarize_file_block(
    fileno: int, offset: int, size: int, pinned_seq: int | None
) -> _BlockSummary | None:
    block = os.pread(fileno, size, offset)
    return _summarize_block(block, pinned_seq) if len(block) == size else None


def _summarize_block(block: bytes, pinned_seq: int | None) -> _BlockSummary | None:
    """The block's summary, or None as soon as any line would be a finding on its own."""
    tenant_id: str | None = None
    first_seq = last_seq = 0
    first_prev_hash = last_hash = ""
    transactions = postings_seen = 0
    changes: dict[str, int] = {}
    currencies: dict[str, str] = {}
    pinned_hash: str | None = None
    # Decoding the block at once gives the same text per line: a newline never belongs to a UTF-8 sequence.
    for text in block.decode("utf-8", "replace").split("\n"):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except ValueError:  # not JSON, or JSON Python refuses to read: the line-by-line check says which
            return None
        if _shape_problem(line) is not None:
            return None
        seq: int = line["seq"]
        if tenant_id is None:
            tenant_id, first_seq, first_prev_hash = line["tenant_id"], seq, line["prev_hash"]
        elif line["tenant_id"] != tenant_id or seq != last_seq + 1 or line["prev_hash"] != last_hash:
            return None
        try:
            if line_hash(line) != line["hash"]:
                return None
        except NotCanonicalizableError:
            return None
        postings: list[dict[str, Any]] = line["postings"]
        if len(postings) < 2:
            return None
        totals: dict[str, int] = {}
        for posting in postings:
            account_id, amount, currency = posting["account_id"], posting["amount"], posting["currency"]
            if amount == 0 or currencies.setdefault(account_id, currency) != currency:
                return None
            totals[currency] = totals.get(currency, 0) + amount
            changes[account_id] = changes.get(account_id, 0) + amount
        if any(totals.values()):
            return None
        last_seq, last_hash = seq, line["hash"]
        if seq == pinned_seq:
            pinned_hash = last_hash
        transactions += 1
        postings_seen += len(postings)
    return _BlockSummary(
        tenant_id,
        first_seq,
        first_prev_hash,
        last_seq,
        last_hash,
        transactions,
        postings_seen,
        changes,
        currencies,
        pinned_hash,
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
