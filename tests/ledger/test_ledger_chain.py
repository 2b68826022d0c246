"""The chain's fast hashing is SHA-256 of RFC 8785 exactly: it must agree with the rule-by-rule encoder."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from pokna_verify.crypto.canonical_json import canonicalize_generic
from pokna_verify.crypto.errors import NotCanonicalizableError
from pokna_verify.ledger.chain import document_hash, format_timestamp
from support.json_strategies import json_like, tricky_text

json_values = json_like()


def test_timestamps_are_microsecond_utc() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    moment = datetime(2026, 1, 2, 3, 4, 5, 60, tzinfo=timezone(timedelta(hours=2)))
    assert format_timestamp(moment) == "2026-01-02T01:04:05.000060Z"
    assert format_timestamp(moment.astimezone(UTC)) == "2026-01-02T01:04:05.000060Z"


envelopes = st.fixed_dictionaries(
    {
        "seq": st.one_of(st.integers(min_value=-(2**60), max_value=2**60), st.booleans()),
        "prev_hash": tricky_text,
        "tenant_id": tricky_text,
        "id": tricky_text,
        "kind": tricky_text,
        "reference": st.one_of(st.none(), tricky_text, st.integers()),
        "metadata": st.dictionaries(tricky_text, json_values, max_size=3),
        "created_at": tricky_text,
        "postings": st.lists(
            st.fixed_dictionaries(
                {
                    "account_id": tricky_text,
                    "amount": st.one_of(st.integers(min_value=-(2**60), max_value=2**60), st.floats()),
                    "currency": tricky_text,
                }
            ),
            max_size=3,
        ),
    }
)


@settings(max_examples=2000, deadline=None)
@given(document=envelopes)
def test_document_hash_is_sha256_of_canonicalize(document: dict[str, object]) -> None:
    try:
        expected: str = hashlib.sha256(canonicalize_generic(document)).hexdigest()
    except NotCanonicalizableError:
        expected = "refused"
    try:
        actual = document_hash(document)
    except NotCanonicalizableError:
        actual = "refused"
    assert actual == expected
