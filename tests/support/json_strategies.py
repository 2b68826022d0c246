"""Hypothesis strategies for what a JSON encoder can trip over, shared by the canonical-JSON and hash tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

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

# Leaves with and without a canonical form: floats (NaN and infinities too) and integers past 2**53.
json_like_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=True, allow_infinity=True)
    | tricky_text
)


def json_like(max_leaves: int = 20) -> st.SearchStrategy[Any]:
    return st.recursive(
        json_like_leaves,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(tricky_text, children, max_size=4),
        max_leaves=max_leaves,
    )
