"""The chain's fast canonical encoding is RFC 8785 exactly: it must agree with the shared canonicalize()."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from pokna.fairness.canonical_json import canonicalize
from pokna.fairness.errors import NotCanonicalizableError
from pokna.ledger.chain import canonical_bytes, document_hash, format_timestamp

# Every kind of text that could trip an encoder: controls, quotes, backslashes, DEL, U+2028,
# BMP characters above the surrogates, astral characters, and lone surrogates.
tricky_text = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0, max_codepoint=0x7F),
        st.sampled_from(['"', "\\", "\u2028", "\ufb01", "\uffff", "\U0001f3b2", "\ud800", "é"]),
        st.characters(),
    ),
    max_size=12,
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=True, allow_infinity=True)
    | tricky_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(tricky_text, children, max_size=4),
    max_leaves=20,
)


def _either(encode: object, value: object) -> bytes | str:
    try:
        return encode(value)  # type: ignore[operator,no-any-return]
    except NotCanonicalizableError:
        return "refused"


@settings(max_examples=3000, deadline=None)
@given(value=json_values)
def test_fast_path_agrees_with_canonicalize(value: object) -> None:
    assert _either(canonical_bytes, value) == _either(canonicalize, value)


def test_known_vectors() -> None:
    assert (
        canonical_bytes({"b": 1, "a": [True, None, '\u001f\n"\\']})
        == b'{"a":[true,null,"\\u001f\\n\\"\\\\"],"b":1}'
    )
    # Keys sort by UTF-16 code units: U+FB01 (0xFB01) after U+1F3B2 (surrogates 0xD83C...).
    assert canonical_bytes({"\ufb01": 1, "\U0001f3b2": 2}) == canonicalize({"\ufb01": 1, "\U0001f3b2": 2})
    assert canonical_bytes({"\ufb01": 1, "\U0001f3b2": 2}).index("\U0001f3b2".encode()) < canonical_bytes(
        {"\ufb01": 1, "\U0001f3b2": 2}
    ).index("\ufb01".encode())


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
        expected: str = hashlib.sha256(canonicalize(document)).hexdigest()
    except NotCanonicalizableError:
        expected = "refused"
    try:
        actual = document_hash(document)
    except NotCanonicalizableError:
        actual = "refused"
    assert actual == expected
