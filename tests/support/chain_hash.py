"""The hash PostgreSQL's ledger_post() completes from pokna_verify.ledger.chain.hash_parts, said in Python:
what the tests hold the SQL and the documented document hash to."""

from __future__ import annotations

import hashlib


def hash_from_parts(parts: tuple[bytes, bytes, bytes], prev_hash: str, seq: int) -> str:
    """document_hash of the document hash_parts split, completed with `prev_hash` and `seq`."""
    before_prev, before_seq, rest = parts
    return hashlib.sha256(
        before_prev + prev_hash.encode("ascii") + before_seq + str(seq).encode("ascii") + rest
    ).hexdigest()
