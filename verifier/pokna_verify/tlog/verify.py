"""RFC 9162 sections 2.1.3.2 and 2.1.4.2: checking an inclusion and a consistency proof, step by step.

Written from the RFC's numbered steps rather than by rebuilding the proof, so a verifier that runs these
shares nothing with the code that made the proof but the hash functions. A failure raises `ProofError`
saying which step it failed at.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence

from pokna_verify.tlog.errors import ProofError
from pokna_verify.tlog.hashing import HASH_SIZE, node_hash


def _lsb(value: int) -> bool:
    return value & 1 == 1


def _check_hashes(hashes: Sequence[bytes], what: str) -> None:
    for position, value in enumerate(hashes):
        if len(value) != HASH_SIZE:
            raise ProofError(f"{what} hash {position} is {len(value)} bytes, not {HASH_SIZE}")


def verify_inclusion(
    leaf: bytes, index: int, tree_size: int, inclusion_path: Sequence[bytes], root_hash: bytes
) -> None:
    """Raise ProofError unless `inclusion_path` proves the leaf hash `leaf` is leaf `index` (from 0) of the
    tree of `tree_size` leaves whose root is `root_hash`."""
    _check_hashes([leaf, root_hash, *inclusion_path], "inclusion")
    # 1. Compare leaf_index against tree_size. If leaf_index >= tree_size, fail.
    if not 0 <= index < tree_size:
        raise ProofError(f"leaf {index} is not in a tree of {tree_size} leaves")
    # 2. Set fn to leaf_index and sn to tree_size - 1.  3. Set r to hash.
    fn, sn, r = index, tree_size - 1, leaf
    # 4. For each value p in the inclusion_path array:
    for p in inclusion_path:
        # a. If sn is 0, then stop the iteration and fail the proof verification.
        if sn == 0:
            raise ProofError(f"the path is longer than a tree of {tree_size} leaves is deep")
        # b. If LSB(fn) is set, or if fn is equal to sn, then:
        if _lsb(fn) or fn == sn:
            # i. Set r to HASH(0x01 || p || r).
            r = node_hash(p, r)
            # ii. If LSB(fn) is not set, right-shift fn and sn equally until LSB(fn) is set or fn is 0.
            while not _lsb(fn) and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            # Otherwise: i. Set r to HASH(0x01 || r || p).
            r = node_hash(r, p)
        # c. Finally, right-shift both fn and sn one time.
        fn, sn = fn >> 1, sn >> 1
    # 5. If sn is equal to 0 and r and the root_hash are equal, the log has proven the inclusion of hash.
    if sn != 0:
        raise ProofError(f"the path is shorter than a tree of {tree_size} leaves is deep")
    if not hmac.compare_digest(r, root_hash):
        raise ProofError(f"the path from leaf {index} leads to another root than the tree of {tree_size}")


def verify_consistency(
    first: int, second: int, first_hash: bytes, second_hash: bytes, consistency_path: Sequence[bytes]
) -> None:
    """Raise ProofError unless `consistency_path` proves the tree of `first` leaves with root `first_hash`
    is the first `first` leaves of the tree of `second` leaves with root `second_hash`."""
    _check_hashes([first_hash, second_hash, *consistency_path], "consistency")
    if not 0 < first <= second:
        raise ProofError(f"no consistency proof joins {first} to {second} leaves (0 < first <= second)")
    if first == second:
        # One tree is consistent with itself: an empty path and the same root.
        if consistency_path:
            raise ProofError("a tree needs no hashes to be consistent with itself")
        if not hmac.compare_digest(first_hash, second_hash):
            raise ProofError(f"two different roots for the one size {first}: a fork")
        return
    # 1. If consistency_path is an empty array, stop and fail the proof verification.
    if not consistency_path:
        raise ProofError("an empty path cannot join two different sizes")
    path = list(consistency_path)
    # 2. If first is an exact power of 2, then prepend first_hash to the consistency_path array.
    if first & (first - 1) == 0:
        path.insert(0, first_hash)
    # 3. Set fn to first - 1 and sn to second - 1.
    fn, sn = first - 1, second - 1
    # 4. If LSB(fn) is set, then right-shift both fn and sn equally until LSB(fn) is not set.
    while _lsb(fn):
        fn, sn = fn >> 1, sn >> 1
    # 5. Set both fr and sr to the first value in the consistency_path array.
    fr = sr = path[0]
    # 6. For each subsequent value c in the consistency_path array:
    for c in path[1:]:
        # a. If sn is 0, then stop the iteration and fail the proof verification.
        if sn == 0:
            raise ProofError(f"the path is longer than joining {first} to {second} leaves takes")
        # b. If LSB(fn) is set, or if fn is equal to sn, then:
        if _lsb(fn) or fn == sn:
            # i. Set fr to HASH(0x01 || c || fr). Set sr to HASH(0x01 || c || sr).
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            # ii. If LSB(fn) is not set, right-shift fn and sn equally until LSB(fn) is set or fn is 0.
            while not _lsb(fn) and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            # Otherwise: i. Set sr to HASH(0x01 || sr || c).
            sr = node_hash(sr, c)
        # c. Finally, right-shift both fn and sn one time.
        fn, sn = fn >> 1, sn >> 1
    # 7. Verify that fr equals first_hash, that sr equals second_hash, and that sn is 0.
    if sn != 0:
        raise ProofError(f"the path is shorter than joining {first} to {second} leaves takes")
    if not hmac.compare_digest(fr, first_hash):
        raise ProofError(f"the path does not rebuild the root of the {first}-leaf tree: not its extension")
    if not hmac.compare_digest(sr, second_hash):
        raise ProofError(f"the path does not rebuild the root of the {second}-leaf tree")
