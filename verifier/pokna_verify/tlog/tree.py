"""The log's tree as complete subtrees: what is stored, and which stored hashes a root or a proof needs.

RFC 9162 defines the tree over all its leaves; a log of 100,000 games cannot rehash them per request. Like
Go's golang.org/x/mod/sumdb/tlog, the log stores the hash of every complete, aligned subtree (a `Node`: level
L holds 2**L leaves, the index-th such block) when its last leaf arrives, about two hashes per leaf and never
rewritten. Any range the RFC's recursion names is a handful of such blocks (`covering_nodes`), so a root or a
proof reads O(log n) stored hashes, and appending a batch reads only the current tree's `frontier`.

Reading is two-phase so the shell can fetch in one query: first which nodes (pure, from sizes alone), then the
hashes from those. Ranges are (start, end) over leaf positions, end exclusive.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pokna_verify.tlog.errors import BadSizeError
from pokna_verify.tlog.hashing import EMPTY_TREE_HASH, leaf_hash, node_hash

LeafRange = tuple[int, int]


@dataclass(frozen=True, order=True)
class Node:
    """The complete subtree over leaves [index * 2**level, (index + 1) * 2**level)."""

    level: int
    index: int

    @property
    def start(self) -> int:
        return self.index << self.level

    @property
    def end(self) -> int:
        return (self.index + 1) << self.level


def split_point(size: int) -> int:
    """RFC 9162 section 2.1.1: k, the largest power of two smaller than n (n > 1)."""
    return 1 << ((size - 1).bit_length() - 1)


def covering_nodes(start: int, end: int) -> list[Node]:
    """The complete subtrees that make up [start, end), left to right, each smaller than the one before.

    Every range the RFC's recursion names starts at a multiple of the largest power of two not above its
    width, so the binary digits of its width are its blocks; a range that does not is refused."""
    nodes = []
    while start < end:
        level = (end - start).bit_length() - 1
        if start % (1 << level):
            raise ValueError(f"leaves [{start}, {end}) are not aligned to complete subtrees")
        nodes.append(Node(level, start >> level))
        start += 1 << level
    return nodes


def range_hash(start: int, end: int, hashes: Mapping[Node, bytes]) -> bytes:
    """MTH(D[start:end]): the blocks folded right to left, which is the RFC's split at k, repeated."""
    blocks = [hashes[node] for node in covering_nodes(start, end)]
    if not blocks:
        return EMPTY_TREE_HASH
    folded = blocks[-1]
    for block in reversed(blocks[:-1]):
        folded = node_hash(block, folded)
    return folded


def frontier(size: int) -> list[Node]:
    """The largest complete subtrees of a tree of `size` leaves: its root is theirs, and a leaf appended
    after them needs no other stored hash to complete the nodes it completes."""
    return covering_nodes(0, size)


def root_hash(size: int, hashes: Mapping[Node, bytes]) -> bytes:
    return range_hash(0, size, hashes)


def appended_nodes(size: int, entries: Sequence[bytes], stored: Mapping[Node, bytes]) -> dict[Node, bytes]:
    """Every node completed by appending `entries` (as leaf data) to a tree of `size` leaves: the new leaves'
    hashes and each parent whose right child just completed. `stored` holds at least `frontier(size)`."""
    made: dict[Node, bytes] = {}
    for offset, entry in enumerate(entries):
        position = size + offset
        node, current = Node(0, position), leaf_hash(entry)
        made[node] = current
        while node.index % 2 == 1:
            sibling = Node(node.level, node.index - 1)
            current = node_hash(made[sibling] if sibling in made else stored[sibling], current)
            node = Node(node.level + 1, node.index // 2)
            made[node] = current
    return made


def inclusion_ranges(index: int, size: int) -> list[LeafRange]:
    """RFC 9162 section 2.1.3.1: the ranges whose hashes make PATH(m, D[n]), from the leaf up."""
    if not 0 <= index < size:
        raise BadSizeError(f"leaf {index} is not in a tree of {size} leaves")
    return _path(index, 0, size)


def _path(m: int, start: int, end: int) -> list[LeafRange]:
    # PATH(0, {d(0)}) = {}; for m < k, PATH(m, D[n]) = PATH(m, D[0:k]) : MTH(D[k:n]);
    # for m >= k, PATH(m, D[n]) = PATH(m - k, D[k:n]) : MTH(D[0:k]).
    if end - start == 1:
        return []
    k = split_point(end - start)
    if m < start + k:
        return [*_path(m, start, start + k), (start + k, end)]
    return [*_path(m, start + k, end), (start, start + k)]


def consistency_ranges(old_size: int, new_size: int) -> list[LeafRange]:
    """RFC 9162 section 2.1.4.1: the ranges whose hashes make PROOF(m, D[n]) = SUBPROOF(m, D[n], true).

    Sizes 0 < m <= n: a tree of m == n leaves is consistent with itself through no hashes at all, and the
    empty tree needs no proof (its root commits to nothing), so it is not asked for one."""
    if not 0 < old_size <= new_size:
        raise BadSizeError(f"no consistency proof from {old_size} to {new_size} leaves (0 < first <= second)")
    return _subproof(old_size, 0, new_size, whole=True)


def _subproof(m: int, start: int, end: int, *, whole: bool) -> list[LeafRange]:
    # SUBPROOF(m, D[m], true) = {}; SUBPROOF(m, D[m], false) = {MTH(D[m])};
    # for m <= k, SUBPROOF(m, D[n], b) = SUBPROOF(m, D[0:k], b) : MTH(D[k:n]);
    # for m > k, SUBPROOF(m, D[n], b) = SUBPROOF(m - k, D[k:n], false) : MTH(D[0:k]).
    if m == end - start:
        return [] if whole else [(start, end)]
    k = split_point(end - start)
    if m <= k:
        return [*_subproof(m, start, start + k, whole=whole), (start + k, end)]
    return [*_subproof(m - k, start + k, end, whole=False), (start, start + k)]


def nodes_for(ranges: Iterable[LeafRange]) -> set[Node]:
    """The stored hashes that the ranges' hashes are made of: what the shell fetches for a proof."""
    return {node for start, end in ranges for node in covering_nodes(start, end)}


def proof_hashes(ranges: Iterable[LeafRange], hashes: Mapping[Node, bytes]) -> list[bytes]:
    return [range_hash(start, end, hashes) for start, end in ranges]
