"""The ranges of a tenant's books an export or an audit bundle covers: which chains, and which seqs of
each, cut at the heads read first (so postings committed while it streams never make it inconsistent).
The reads are pokna.ledger.export_aio's and pokna.ledger.audit_reads's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pokna.errors import InvalidRequest


@dataclass(frozen=True)
class SeqRange:
    """The seqs of one chain an export covers, both ends included."""

    first: int
    last: int
    chain: int = 0

    @property
    def empty(self) -> bool:
        return self.first > self.last


SEQ_NEEDS_CHAIN = (
    "from_seq and to_seq are positions on one chain: give chain too (chain=0 is what a seq meant before the "
    "journal had chains); to read every chain on from where you left off, ask each chain from the seq after "
    "the last one you have of it (every transaction names its chain and seq); the audit bundle also takes "
    "from_time, on every chain"
)


def selected_chains(
    chain: int | None, from_seq: int | None, to_seq: int | None, heads: Mapping[int, int]
) -> list[int]:
    """The chains a range covers: `chain` alone when given; otherwise every chain with a transaction,
    ascending. A seq bound without a chain is refused (InvalidRequest naming `query.chain`): a seq is a
    position on one chain. It used to mean chain 0's (the only chain before there were chains), so an
    incremental reader that asked `from_seq` alone silently got chain 0 and nothing of the others (issue 37,
    item 7)."""
    check_seq_bounds(chain, from_seq, to_seq)
    if chain is not None:
        return [chain]
    return sorted(heads) or [0]


def check_seq_bounds(chain: int | None, from_seq: int | None, to_seq: int | None) -> None:
    """Refuse a seq bound without a chain (see selected_chains), and bounds that are swapped: a range that
    ends before it starts would read as an empty chain."""
    if chain is None and (from_seq is not None or to_seq is not None):
        raise InvalidRequest(SEQ_NEEDS_CHAIN, field="query.chain")
    if from_seq is not None and to_seq is not None and from_seq > to_seq:
        raise InvalidRequest(f"to_seq {to_seq} is before from_seq {from_seq}", field="query.to_seq")


def seq_ranges(
    heads: Mapping[int, int], chains: list[int], from_seq: int | None, to_seq: int | None
) -> list[SeqRange]:
    """Per chain in `chains`, the asked-for seqs cut at that chain's head in `heads` (empty ones kept)."""
    ranges = []
    for chain in chains:
        last = heads.get(chain, 0)
        if to_seq is not None:
            last = min(last, to_seq)
        ranges.append(SeqRange(max(from_seq or 1, 1), last, chain))
    return ranges
