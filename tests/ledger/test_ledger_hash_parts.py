"""The bytes hashed around the lock: hash_parts + prev_hash + seq is exactly the documented document's hash."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from pokna_verify.ledger.chain import (
    GENESIS_HASH,
    document_hash,
    hash_parts,
    transaction_document,
)
from support.chain_hash import hash_from_parts

# Text that could trip an encoder (controls, quotes, backslashes, U+2028, astral characters), no lone
# surrogates: the ledger refuses those before hashing.
text = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0, max_codepoint=0x7F),
        st.sampled_from(['"', "\\", "\u2028", "\ufb01", "\uffff", "\U0001f3b2", "é"]),
        st.characters(exclude_categories=["Cs"]),
    ),
    max_size=12,
)
metadata_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1) | text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=10,
)
hex_hashes = st.one_of(st.just(GENESIS_HASH), st.binary(min_size=32, max_size=32).map(bytes.hex))


@settings(max_examples=1500, deadline=None)
@given(
    tenant_id=text,
    transaction_id=text,
    kind=text,
    reference=st.none() | text,
    metadata=st.dictionaries(text, metadata_values, max_size=4),
    created_at=text,
    postings=st.lists(st.tuples(text, st.integers(min_value=-(10**15), max_value=10**15), text), max_size=4),
    prev_hash=hex_hashes,
    seq=st.integers(min_value=1, max_value=2**53 - 1),
)
def test_hash_from_parts_is_the_document_hash(
    tenant_id: str,
    transaction_id: str,
    kind: str,
    reference: str | None,
    metadata: dict[str, object],
    created_at: str,
    postings: list[tuple[str, int, str]],
    prev_hash: str,
    seq: int,
) -> None:
    parts = hash_parts(
        tenant_id=tenant_id, transaction_id=transaction_id, kind=kind, reference=reference,
        metadata=metadata, created_at=created_at, postings=postings,
    )  # fmt: skip
    expected = document_hash(
        transaction_document(
            seq=seq, prev_hash=prev_hash, tenant_id=tenant_id, transaction_id=transaction_id, kind=kind,
            reference=reference, metadata=metadata, created_at=created_at, postings=postings,
        )
    )  # fmt: skip
    before_prev, before_seq, rest = parts
    # What ledger_post() computes in SQL: sha256(before_prev || prev_hash || before_seq || seq::text || rest).
    in_sql = hashlib.sha256(
        before_prev + prev_hash.encode() + before_seq + str(seq).encode() + rest
    ).hexdigest()
    assert in_sql == expected
    assert hash_from_parts(parts, prev_hash, seq) == expected


def test_the_parts_leave_exactly_prev_hash_and_seq_open() -> None:
    before_prev, before_seq, rest = hash_parts(
        tenant_id="ten_1",
        transaction_id="txn_1",
        kind="ante",
        reference=None,
        metadata={},
        created_at="2026-11-30T00:00:00.000000Z",
        postings=[("acct_a", -5, "CREDIT"), ("acct_b", 5, "CREDIT")],
    )
    assert before_prev.endswith(b',"prev_hash":"')
    assert before_seq == b'","reference":null,"seq":'
    assert rest == b',"tenant_id":"ten_1"}'
