"""The log's Merkle tree against pymerkle, an implementation we did not write: the same roots for every size,
the same inclusion paths hash for hash, and proofs it accepts; our RFC 9162 verifiers accept ours and refuse
a changed leaf, a wrong index or size, and a history that was rewritten."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymerkle import ConsistencyProof, InclusionProof, InmemoryTree, verify_consistency, verify_inclusion

from pokna_verify.tlog import verify as rfc
from pokna_verify.tlog.errors import BadSizeError, ProofError
from pokna_verify.tlog.hashing import EMPTY_TREE_HASH, leaf_hash
from pokna_verify.tlog.tree import (
    Node,
    appended_nodes,
    consistency_ranges,
    frontier,
    inclusion_ranges,
    nodes_for,
    proof_hashes,
    root_hash,
)

MAX_LEAVES = 70


def entries(count: int, salt: bytes = b"") -> list[bytes]:
    return [hashlib.sha256(salt + i.to_bytes(4, "big")).digest() for i in range(count)]


def grown(batches: list[list[bytes]]) -> dict[Node, bytes]:
    """The stored hashes after appending the batches in turn, each reading only the frontier it needs."""
    stored: dict[Node, bytes] = {}
    size = 0
    for batch in batches:
        frontier_hashes = {node: stored[node] for node in frontier(size)}
        stored.update(appended_nodes(size, batch, frontier_hashes))
        size += len(batch)
    return stored


def their_tree(leaf_data: list[bytes]) -> InmemoryTree:
    tree = InmemoryTree(algorithm="sha256")
    for entry in leaf_data:
        tree.append_entry(entry)
    return tree


TREE = entries(MAX_LEAVES)
OURS = grown([TREE[:1], TREE[1:5], TREE[5:33], TREE[33:]])
THEIRS = their_tree(TREE)


def test_the_empty_tree_hashes_to_sha256_of_nothing() -> None:
    assert root_hash(0, {}) == EMPTY_TREE_HASH == hashlib.sha256().digest()


@pytest.mark.parametrize("size", range(1, MAX_LEAVES + 1))
def test_roots_agree_with_pymerkle_for_every_size(size: int) -> None:
    assert root_hash(size, OURS) == THEIRS.get_root(size)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_inclusion_paths_are_pymerkles_and_it_accepts_them(data: st.DataObject) -> None:
    size = data.draw(st.integers(1, MAX_LEAVES), label="size")
    index = data.draw(st.integers(0, size - 1), label="index")
    path = proof_hashes(inclusion_ranges(index, size), OURS)
    theirs = THEIRS.prove_inclusion(index + 1, size)
    assert path == theirs.path[1:]
    leaf = leaf_hash(TREE[index])
    ours_as_theirs = InclusionProof("sha256", True, size, index + 1, theirs.rule, [leaf, *path])
    verify_inclusion(leaf, THEIRS.get_root(size), ours_as_theirs, index=index + 1, size=size)
    rfc.verify_inclusion(leaf, index, size, path, THEIRS.get_root(size))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_consistency_proofs_join_pymerkles_roots(data: st.DataObject) -> None:
    new = data.draw(st.integers(1, MAX_LEAVES), label="new")
    old = data.draw(st.integers(1, new), label="old")
    path = proof_hashes(consistency_ranges(old, new), OURS)
    rfc.verify_consistency(old, new, THEIRS.get_root(old), THEIRS.get_root(new), path)
    # and pymerkle's own proof between the same two states holds for it: the roots are the ones it made
    theirs = THEIRS.prove_consistency(old, new)
    assert isinstance(theirs, ConsistencyProof)
    verify_consistency(root_hash(old, OURS), root_hash(new, OURS), theirs, prior_size=old, later_size=new)


def test_a_proof_reads_only_a_few_stored_hashes() -> None:
    """What makes a proof cheap on a large log: O(log n) stored nodes, never the leaves."""
    size = 100_000
    for index in (0, 4_097, 65_535, 99_999):
        assert len(nodes_for(inclusion_ranges(index, size))) <= 2 * size.bit_length()
    assert len(nodes_for(consistency_ranges(77_777, size))) <= 2 * size.bit_length()


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_changed_leaf_or_a_wrong_position_fails_inclusion(data: st.DataObject) -> None:
    size = data.draw(st.integers(2, MAX_LEAVES), label="size")
    index = data.draw(st.integers(0, size - 1), label="index")
    path = proof_hashes(inclusion_ranges(index, size), OURS)
    root, leaf = root_hash(size, OURS), leaf_hash(TREE[index])
    with pytest.raises(ProofError):
        rfc.verify_inclusion(leaf_hash(TREE[index] + b"!"), index, size, path, root)
    other = data.draw(st.integers(0, size - 1).filter(lambda i: i != index), label="other")
    with pytest.raises(ProofError):
        rfc.verify_inclusion(leaf, other, size, path, root)
    with pytest.raises(ProofError):
        rfc.verify_inclusion(leaf, index, size, path, root_hash(size - 1, OURS))
    if path:
        flipped = bytes([path[0][0] ^ 1]) + path[0][1:]
        with pytest.raises(ProofError):
            rfc.verify_inclusion(leaf, index, size, [flipped, *path[1:]], root)
        with pytest.raises(ProofError):
            rfc.verify_inclusion(leaf, index, size, path[:-1], root)
    with pytest.raises(ProofError):
        rfc.verify_inclusion(leaf, index, size, [*path, root], root)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_rewritten_history_fails_consistency(data: st.DataObject) -> None:
    """A log that changed one of the first `old` games, then grew: no proof joins the old root to the new."""
    new = data.draw(st.integers(2, MAX_LEAVES), label="new")
    old = data.draw(st.integers(1, new - 1), label="old")
    changed = data.draw(st.integers(0, old - 1), label="changed")
    forked_leaves = list(TREE[:new])
    forked_leaves[changed] = b"a game the first witness never saw"
    forked = grown([forked_leaves])
    path = proof_hashes(consistency_ranges(old, new), forked)
    with pytest.raises(ProofError):
        rfc.verify_consistency(old, new, root_hash(old, OURS), root_hash(new, forked), path)
    honest = proof_hashes(consistency_ranges(old, new), OURS)
    with pytest.raises(ProofError):
        rfc.verify_consistency(old, new, root_hash(old, OURS), root_hash(new, forked), honest)
    with pytest.raises(ProofError):  # a rollback: the later size presented as the earlier
        rfc.verify_consistency(new, old, root_hash(new, OURS), root_hash(old, OURS), honest)


def test_one_size_two_roots_is_a_fork() -> None:
    forked = grown([[*TREE[:9], b"other"]])
    rfc.verify_consistency(10, 10, root_hash(10, OURS), root_hash(10, OURS), [])
    with pytest.raises(ProofError, match="fork"):
        rfc.verify_consistency(10, 10, root_hash(10, OURS), root_hash(10, forked), [])


@pytest.mark.parametrize(("index", "size"), [(0, 0), (5, 5), (-1, 3)])
def test_no_inclusion_proof_outside_the_tree(index: int, size: int) -> None:
    with pytest.raises(BadSizeError):
        inclusion_ranges(index, size)


@pytest.mark.parametrize(("old", "new"), [(0, 5), (6, 5), (-1, 1)])
def test_no_consistency_proof_between_impossible_sizes(old: int, new: int) -> None:
    with pytest.raises(BadSizeError):
        consistency_ranges(old, new)
