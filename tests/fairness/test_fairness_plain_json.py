"""pokna_verify.fairness.plain_json: a document read from JSON text and found plain has signed bytes equal to
pokna_verify.crypto's (RFC 8785), without canonicalize's walk over every value."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pokna_verify.bounded_input import InputLimitError
from pokna_verify.crypto.signing import signed_bytes
from pokna_verify.fairness.plain_json import loads_noting_plain, plain_signed_bytes

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
_values = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=8), _values, max_size=6), st.booleans())
def test_a_plain_document_has_the_canonical_signed_bytes(document: dict[str, Any], ascii_text: bool) -> None:
    text = json.dumps({**document, "signature": "x"}, ensure_ascii=ascii_text)
    value, plain = loads_noting_plain(text)
    assert value == json.loads(text)
    assert plain <= _exact(value)
    if plain:
        assert plain_signed_bytes(value) == signed_bytes(value)


def _exact(value: object) -> bool:
    """No float, every integer within +-(2**53 - 1), ASCII text only: written out independently."""
    if isinstance(value, str):
        return value.isascii()
    if isinstance(value, float):
        return False
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) <= 2**53 - 1
    if isinstance(value, dict):
        return all(key.isascii() and _exact(item) for key, item in value.items())
    if isinstance(value, list):
        return all(_exact(item) for item in value)
    return True


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1.0}',
        '{"a": [1e3]}',
        '{"a": 9007199254740992}',
        '{"a": -9007199254740992}',
        '{"a": NaN}',
        '{"a": -Infinity}',
        '{"\\u00e9": 1}',
        '{"a": "\\u00e9"}',
        '{"a": "é"}',
        '{"a": "\\u0001"}',
    ],
)
def test_what_is_not_plain(text: str) -> None:
    assert loads_noting_plain(text)[1] is False


def test_what_is_plain() -> None:
    value, plain = loads_noting_plain('{"a": [9007199254740991, -9007199254740991, "x\\n\\"", true, null]}')
    assert plain is True
    assert (
        plain_signed_bytes({**value, "signature": "s"})
        == b'{"a":[9007199254740991,-9007199254740991,"x\\n\\"",true,null]}'
    )


def test_what_json_refuses_it_refuses() -> None:
    with pytest.raises(ValueError, match="Expecting"):
        loads_noting_plain('{"a": ')


def test_what_the_verifiers_refuse_it_refuses() -> None:
    """A lone surrogate was read as not plain, then raised UnicodeEncodeError wherever it was encoded."""
    with pytest.raises(InputLimitError, match="lone UTF-16 surrogate"):
        loads_noting_plain('{"a": "\\ud800"}')
