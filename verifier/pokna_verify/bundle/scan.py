"""Checking an audit bundle (verify_bundle: any lines; verify_bundle_stream: a file or a pipe), on every
core: blocks of whole lines read and judged by worker processes, taken in order by
pokna_verify.bundle.check.BundleAudit.

Nearly all the work needs nothing but the line itself: reading its JSON, and for a game record parsing its
proof and checking it (commitment, rolls, signature, rules replay), and for a transaction recomputing its
hash. A worker does that for a block of ~512 KiB of lines and sends back each record as read, the proofs'
verdicts and the facts the money check needs (never the proofs), and a summary of the block's ledger
lines (pokna_verify.ledger.scan.summarize_lines: seqs, links, hashes, balance). Here, in order, the block's
ledger summary is taken in when it continues the chain, or its lines are checked again one by one; then
every record goes through BundleAudit.take, which runs every check that needs the records before it. The
rules, and so every finding and its wording, are BundleAudit's and the ledger's whoever read the lines.

A worker is started with what every proof is checked against: the key ring settled by the opening lines
and the drand chains the auditor trusts (a worker that fell back on quicknet alone would fail every game
played against a chain the auditor chose to trust, on its blocks only).

This process reads its share of the blocks too, so `processes` counts it: its memory (the accounts and games
the checks remember) and one worker's, not three interpreters, on two cores. At most two blocks per process
are in flight, so memory stays flat however large the bundle. Workers read a regular file themselves by
offset; any other input is sent to them.
"""

from __future__ import annotations

import itertools
import os
import signal
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from sys import intern
from typing import Any, BinaryIO, TypedDict, Unpack

from pokna_verify.bounded_input import next_line
from pokna_verify.bundle.check import BundleAudit, Progress
from pokna_verify.bundle.lines import ReadLine, read_line
from pokna_verify.bundle.play_tally import PlayTally
from pokna_verify.bundle.records import TRANSACTION
from pokna_verify.bundle.report import BundleReport
from pokna_verify.fairness.beacon import KNOWN_CHAINS, BeaconChain
from pokna_verify.fairness.json_reader import JsonReader
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.ledger.check import BlockSummary
from pokna_verify.ledger.scan import (
    block_lines,
    line_count,
    pool_context,
    regular_file,
    summarize_lines,
    whole_line_blocks,
    worker_pool,
)

_BLOCK_BYTES = 1 << 19
_BLOCK_LINES = 2000
_POOL_AFTER_BLOCKS = 4
# The header and the key ring: read first, here, since the key ring settles the keys proofs are checked with.
_OPENING_LINES = 2


@dataclass(frozen=True)
class ReadBlock:
    lines: list[ReadLine]
    ledger: BlockSummary | None  # None: some ledger line is a finding on its own, or breaks the chain


@dataclass(frozen=True)
class _Block:
    """Whole lines, the first being line `first`: as text or bytes, or `size` bytes of the file at `offset`."""

    first: int
    lines: Sequence[str | bytes] | None
    data: bytes | None = None
    offset: int = 0

    def text_lines(self) -> Sequence[str | bytes]:
        return self.lines if self.lines is not None else block_lines(self.data or b"")


def read_block(
    first: int,
    lines: Sequence[str | bytes],
    keys: KeyRing | None,
    beacon_chains: Sequence[BeaconChain] = KNOWN_CHAINS,
) -> ReadBlock:
    read: list[ReadLine] = []
    transactions: list[dict[str, Any]] = []
    for offset, raw in enumerate(lines):
        line = read_line(first + offset, raw, lambda: keys, beacon_chains)
        if line is None:
            continue
        record = line[1]
        if isinstance(record, dict) and record.get("type") == TRANSACTION:
            transactions.append({key: value for key, value in record.items() if key != "type"})
        read.append(line)
    return ReadBlock(read, summarize_lines(transactions, None))


def take_block(audit: BundleAudit, block: ReadBlock) -> None:
    ledger = block.ledger
    if ledger is not None:  # the ledger remembers every account: one string per id, shared with the journal
        ledger = replace(
            ledger,
            balance_changes={intern(account): change for account, change in ledger.balance_changes.items()},
            account_currency={intern(account): intern(c) for account, c in ledger.account_currency.items()},
        )
    audit.ledger_taken = ledger is not None and audit.ledger.continue_with(ledger)
    try:
        for line in block.lines:
            audit.take(*line)
    finally:
        audit.ledger_taken = False


class AuditOptions(TypedDict, total=False):
    """How a bundle is checked (BundleAudit's defaults for what is left out)."""

    keys: KeyRing | None  # the published key ring; None: the bundle's own
    beacon_chains: Sequence[BeaconChain]  # the drand chains a beacon-mode proof may name (quicknet unless
    # the auditor trusts more, as tests do)
    processes: int  # 1: checked here
    progress: Progress | None
    play: PlayTally | None  # a period report's sums (pokna_verify.bundle.play_tally), kept in the same pass
    previous_checkpoint: str | None  # the log checkpoint of the previous bundle, which this one's extends


def verify_bundle(lines: Iterable[str | bytes], **options: Unpack[AuditOptions]) -> BundleReport:
    """Lines of a bundle, checked here (processes=1) or on that many processes (verify_bundle_stream reads
    a file; this takes any lines)."""
    audit = BundleAudit(**options)
    numbered = enumerate(lines, start=1)
    for number, raw in itertools.islice(numbered, _OPENING_LINES):
        audit.feed(number, raw)

    def blocks() -> Iterator[_Block]:
        while chunk := list(itertools.islice(numbered, _BLOCK_LINES)):
            yield _Block(chunk[0][0], [raw for _, raw in chunk])

    return _scan(audit, blocks(), None)


def verify_bundle_stream(stream: BinaryIO, **options: Unpack[AuditOptions]) -> BundleReport:
    """verify_bundle of a file or a pipe (read from where it stands), on `processes` processes."""
    audit = BundleAudit(**options)
    number = 0
    while number < _OPENING_LINES and (raw := next_line(stream, number + 1)):
        number += 1
        audit.feed(number, raw)
    fileno = regular_file(stream) if pool_context().get_start_method() == "fork" else None
    offset = stream.tell() if fileno is not None else 0

    def blocks() -> Iterator[_Block]:
        nonlocal number, offset
        for data in whole_line_blocks(stream, _BLOCK_BYTES, number + 1):
            yield _Block(number + 1, None, data, offset)
            number += line_count(data)
            offset += len(data)

    return _scan(audit, blocks(), fileno)


def _scan(audit: BundleAudit, blocks: Iterator[_Block], fileno: int | None) -> BundleReport:
    head = list(itertools.islice(blocks, _POOL_AFTER_BLOCKS))
    keys, chains = audit.keys_for_proofs(), audit.beacon_chains
    if audit.processes < 2 or len(head) < _POOL_AFTER_BLOCKS:
        for block in itertools.chain(head, blocks):
            take_block(audit, read_block(block.first, block.text_lines(), keys, chains))
        return audit.finish()
    in_flight: deque[tuple[_Block, Future[ReadBlock | None] | None]] = deque()
    keys_json = keys.to_json() if keys is not None else None
    # This process is one of the `processes`: it reads every processes-th block itself (a task of None is
    # read here when its turn comes) between taking the blocks in, and one process fewer is started.
    chains_json = [chain.to_json() for chain in chains]
    with worker_pool(audit.processes - 1, _start_worker, (keys_json, chains_json)) as pool:
        for index, block in enumerate(itertools.chain(head, blocks)):
            task: Future[ReadBlock | None] | None
            try:
                if index % audit.processes == audit.processes - 1:
                    task = None
                elif fileno is not None and block.data is not None:
                    task = pool.submit(_read_file_block, fileno, block.offset, len(block.data), block.first)
                else:
                    task = pool.submit(_read_block_here, block.first, block.text_lines())
            except BrokenProcessPool:
                task = None
            in_flight.append((block, task))
            if len(in_flight) >= 2 * audit.processes:
                _settle(audit, keys, chains, *in_flight.popleft())
        while in_flight:
            _settle(audit, keys, chains, *in_flight.popleft())
    return audit.finish()


def _settle(
    audit: BundleAudit,
    keys: KeyRing | None,
    chains: Sequence[BeaconChain],
    block: _Block,
    task: Future[ReadBlock | None] | None,
) -> None:
    try:
        read = None if task is None else task.result()
    except BrokenProcessPool:  # a worker died (killed, out of memory): nothing is lost, only time
        read = None
    if read is None:
        read = read_block(block.first, block.text_lines(), keys, chains)
    take_block(audit, read)


# --- in a worker ------------------------------------------------------------------------------------------

_worker_keys: KeyRing | None = None
_worker_chains: tuple[BeaconChain, ...] = KNOWN_CHAINS


def _start_worker(keys_json: Mapping[str, Any] | None, chains_json: Sequence[Mapping[str, Any]]) -> None:
    """A forked worker inherits its parent's handlers; the parent's clean-up on SIGTERM is not the worker's.
    The keys and chains arrive as JSON, as any start method can send them."""
    global _worker_keys, _worker_chains
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _worker_keys = KeyRing.from_json(keys_json) if keys_json is not None else None
    _worker_chains = tuple(BeaconChain.read(JsonReader(chain)) for chain in chains_json)


def _read_block_here(first: int, lines: Sequence[str | bytes]) -> ReadBlock | None:
    return read_block(first, lines, _worker_keys, _worker_chains)


def _read_file_block(fileno: int, offset: int, size: int, first: int) -> ReadBlock | None:
    data = os.pread(fileno, size, offset)
    return read_block(first, block_lines(data), _worker_keys, _worker_chains) if len(data) == size else None
