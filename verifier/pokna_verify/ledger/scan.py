"""verify_export for large exports, on every core: the worker pool, the blocks of lines it shares out,
and what a worker checks in one block. The rules, and every finding's wording, stay pokna_verify.ledger.check's.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing.context import BaseContext
from typing import Any, BinaryIO

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from pokna_verify.bounded_input import InputLimitError, finish_line, loads
from pokna_verify.crypto.errors import NotCanonicalizableError
from pokna_verify.invariant import of_type
from pokna_verify.ledger.chain import line_hash
from pokna_verify.ledger.check import AuditReport, BlockSummary, ChainSpan, ExportAudit, shape_problem

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
    well-formed, every hash right, seqs and prev_hashes continuous on each chain, every transaction
    balanced. A block that passes comes back as a summary (per chain its first and last link, its balance
    changes); the chains and the balances are stitched here, in order. A block that fails, or does not
    continue every chain it is on, is verified again here line by line, exactly as verify_export does, so
    every finding and its wording are the same. At most two blocks per process are in flight: memory stays
    flat at any size.
    """
    audit = ExportAudit(checkpoint, public_key)
    blocks = whole_line_blocks(stream)
    head = list(itertools.islice(blocks, _POOL_AFTER_BLOCKS))
    count = processes if processes is not None else usable_cores()
    if count < 2 or len(head) < _POOL_AFTER_BLOCKS:
        number = 1
        for block in itertools.chain(head, blocks):
            number = _check_block(audit, block, number)
        return audit.finish()
    pinned_seqs = audit.pinned.seqs() if audit.pinned is not None else None
    in_flight: deque[tuple[bytes, int, Future[BlockSummary | None] | None]] = deque()
    number = 1
    context = pool_context()
    # Forked workers share a regular file's descriptor: they read their block themselves, by offset,
    # rather than have it copied to them through a pipe.
    fileno = regular_file(stream) if context.get_start_method() == "fork" else None
    offset = stream.tell() - sum(map(len, head)) if fileno is not None else 0
    with worker_pool(count) as pool:
        for block in itertools.chain(head, blocks):
            task: Future[BlockSummary | None] | None
            try:
                task = (
                    pool.submit(_summarize_file_block, fileno, offset, len(block), pinned_seqs)
                    if fileno is not None
                    else pool.submit(_summarize_block, block, pinned_seqs)
                )
            except BrokenProcessPool:
                task = None
            in_flight.append((block, number, task))
            number += line_count(block)
            offset += len(block)
            if len(in_flight) >= 2 * count:
                _settle(audit, *in_flight.popleft())
        while in_flight:
            _settle(audit, *in_flight.popleft())
    audit.report.processes = count
    return audit.finish()


def usable_cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


@contextmanager
def worker_pool(
    count: int, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()
) -> Iterator[ProcessPoolExecutor]:
    """Workers that exit when the work is done. A ProcessPoolExecutor rather than a multiprocessing Pool:
    when a worker dies its tasks fail with BrokenProcessPool instead of waiting forever; abandoned work
    is cancelled. `initializer` (default: SIGTERM's default handler back) runs in each worker."""
    started = initializer or _default_signals
    pool = ProcessPoolExecutor(count, mp_context=pool_context(), initializer=started, initargs=initargs)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def pool_context() -> BaseContext:
    """fork where there is one: the workers start in milliseconds, with everything already imported."""
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _default_signals() -> None:
    """A forked worker inherits its parent's handlers; the parent's clean-up on SIGTERM is not the worker's."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def regular_file(stream: BinaryIO) -> int | None:
    try:
        fileno = stream.fileno()
        return fileno if stat.S_ISREG(os.fstat(fileno).st_mode) and stream.seekable() else None
    except (OSError, ValueError):
        return None


def whole_line_blocks(stream: BinaryIO, size: int | None = None, number: int = 1) -> Iterator[bytes]:
    """Whole lines, about `size` bytes (default _BLOCK_BYTES) at a time, the first being line `number`; none
    longer than MAX_LINE_BYTES (pokna_verify.bounded_input) is read."""
    while block := stream.read(size or _BLOCK_BYTES):
        if not block.endswith(b"\n"):
            started = len(block) - block.rfind(b"\n") - 1
            block += finish_line(stream, started, number + block.count(b"\n"))
        yield block
        number += line_count(block)


def block_lines(block: bytes) -> list[bytes]:
    """The lines of a block as iterating over the file gives them: split after each newline, kept."""
    parts = block.split(b"\n")
    last = parts.pop()
    lines = [part + b"\n" for part in parts]
    if last:
        lines.append(last)
    return lines


def line_count(block: bytes) -> int:
    return block.count(b"\n") + (0 if block.endswith(b"\n") else 1)


def _check_block(audit: ExportAudit, block: bytes, number: int) -> int:
    """Check every line of `block` here, the first being line `number`; the number of the line after it."""
    for offset, raw in enumerate(block_lines(block)):
        audit.check(number + offset, raw)
    return number + line_count(block)


def _settle(
    audit: ExportAudit, block: bytes, number: int, pending: Future[BlockSummary | None] | None
) -> None:
    """Take in a block a worker checked, or check it here: when the worker found a problem in it, when
    it does not continue the chain, or when no worker could take it (`pending` is None: the pool broke)."""
    try:
        summary = None if pending is None else pending.result()
    except BrokenProcessPool:  # a worker died (killed, out of memory): nothing is lost, only time
        summary = None
    if summary is not None and audit.continue_with(summary):
        audit.report.blocks_from_workers += 1
    else:
        _check_block(audit, block, number)


def _summarize_file_block(
    fileno: int, offset: int, size: int, pinned_seqs: Mapping[int, int] | None
) -> BlockSummary | None:
    block = os.pread(fileno, size, offset)
    return _summarize_block(block, pinned_seqs) if len(block) == size else None


def _summarize_block(block: bytes, pinned_seqs: Mapping[int, int] | None) -> BlockSummary | None:
    """The block's summary, or None as soon as any line would be a finding on its own."""
    lines = []
    # Decoding the block at once gives the same text per line: a newline never belongs to a UTF-8 sequence.
    for text in block.decode("utf-8", "replace").split("\n"):
        if not text.strip():
            continue
        try:
            lines.append(loads(text))
        except (ValueError, InputLimitError):  # not JSON, or past a limit: the line-by-line check says which
            return None
    return summarize_lines(lines, pinned_seqs)


def summarize_lines(lines: Iterable[object], pinned_seqs: Mapping[int, int] | None) -> BlockSummary | None:
    """The summary of consecutive export lines, already read as JSON (an audit bundle's transactions
    too), or None as soon as any line would be a finding on its own: ExportAudit.continue_with takes it
    in exactly as ExportAudit.check_parsed would have taken each line. The chains may be interleaved;
    each chain's lines must follow each other. `pinned_seqs`: per chain, the seq a checkpoint pins."""
    tenant_id: str | None = None
    # Per chain: [first_seq, first_prev_hash, last_seq, last_hash, transactions]. The chain of the line
    # before is kept in locals: in the service's (chain, seq) order the next line is nearly always on it.
    spans: dict[int, list[Any]] = {}
    chain_before: int | None = None
    last_seq, last_hash, count = 0, "", 0
    pinned = pinned_seqs or {}
    pinned_seq: int | None = None
    transactions = postings_seen = 0
    changes: dict[str, int] = {}
    currencies: dict[str, str] = {}
    pinned_hashes: dict[int, str] = {}
    for line in lines:
        if shape_problem(line) is not None:
            return None
        line = of_type(line, dict, "a line of the shape checked above")
        seq: int = line["seq"]
        chain: int = line.get("chain", 0)
        if tenant_id is None:
            tenant_id = line["tenant_id"]
        elif line["tenant_id"] != tenant_id:
            return None
        if chain != chain_before:
            if chain_before is not None:
                spans[chain_before][2:] = last_seq, last_hash, count
            span = spans.get(chain)
            if span is None:  # the chain's first line here: what it follows is checked at the seam
                span = spans[chain] = [seq, line["prev_hash"], seq - 1, line["prev_hash"], 0]
            _first_seq, _first_prev_hash, last_seq, last_hash, count = span
            chain_before, pinned_seq = chain, pinned.get(chain)
        if seq != last_seq + 1 or line["prev_hash"] != last_hash:
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
        count += 1
        if seq == pinned_seq:
            pinned_hashes[chain] = last_hash
        transactions += 1
        postings_seen += len(postings)
    if chain_before is not None:
        spans[chain_before][2:] = last_seq, last_hash, count
    return BlockSummary(
        tenant_id,
        {chain: ChainSpan(*span) for chain, span in spans.items()},
        (chain_before, last_seq) if chain_before is not None else None,
        transactions,
        postings_seen,
        changes,
        currencies,
        pinned_hashes,
    )
