"""RFC 9162 section 2.1: the Merkle Tree Hash with SHA-256.

Leaves and interior nodes hash under different one-byte prefixes (0x00, 0x01), so no leaf can be passed off
as a node whose children the log never held (a second preimage of the tree).
"""

from __future__ import annotations

import hashlib

HASH_SIZE = 32
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"

EMPTY_TREE_HASH = hashlib.sha256(b"").digest()
"""MTH({}) = SHA-256(): the root of the tree with no leaves."""


def leaf_hash(entry: bytes) -> bytes:
    """MTH({d(0)}) = SHA-256(0x00 || d(0))."""
    return hashlib.sha256(LEAF_PREFIX + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """MTH(D[n]) = SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n])), given the two halves' hashes."""
    return hashlib.sha256(NODE_PREFIX + left + right).digest()
