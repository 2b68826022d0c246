"""RFC 8785 canonical JSON against the RFC's own examples."""

from __future__ import annotations

import json
import math
import struct
from enum import Enum, StrEnum

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pokna_verify.crypto.canonical_json import (
    MAX_SAFE_INTEGER,
    canonicalize,
    canonicalize_generic,
    format_number,
    stdlib_form_is_canonical,
)
from pokna_verify.crypto.errors import NotCanonicalizableError
from support.json_strategies import json_like_leaves, tricky_text


def test_rfc8785_section_3_2_2_example() -> None:
    source = r"""{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }"""
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonicalize(json.loads(source)) == expected.encode("utf-8")


def test_rfc8785_section_3_2_3_sorts_by_utf16_code_units() -> None:
    source = r"""{
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }"""
    values = [value for value in json.loads(canonicalize(json.loads(source)))]
    assert values == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


# RFC 8785 appendix B: IEEE 754 bit patterns and their canonical text.
APPENDIX_B = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize(("bits", "text"), APPENDIX_B)
def test_rfc8785_appendix_b_numbers(bits: str, text: str) -> None:
    assert format_number(struct.unpack(">d", bytes.fromhex(bits))[0]) == text


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused(value: float) -> None:
    with pytest.raises(NotCanonicalizableError):
        canonicalize({"x": [value]})


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_numbers_round_trip(value: float) -> None:
    assert float(format_number(value)) == value


def test_integers_outside_the_safe_range_are_refused() -> None:
    assert canonicalize(MAX_SAFE_INTEGER) == b"9007199254740991"
    assert canonicalize(-MAX_SAFE_INTEGER) == b"-9007199254740991"
    with pytest.raises(NotCanonicalizableError, match=r"\$\.amount"):
        canonicalize({"amount": MAX_SAFE_INTEGER + 1})


@pytest.mark.parametrize(
    "value",
    [{1: "non-string key"}, {"bytes": b"x"}, {"set": {1}}, "lone \ud800 surrogate", {"\udc00": 1}, object()],
)
def test_values_without_a_json_form_are_refused(value: object) -> None:
    with pytest.raises(NotCanonicalizableError):
        canonicalize(value)


def test_control_characters_use_lowercase_unicode_escapes() -> None:
    assert canonicalize("\x00\x1f\x7f\b\t\n\f\r") == b'"\\u0000\\u001f\x7f\\b\\t\\n\\f\\r"'


def test_nested_whitespace_free_and_ordered() -> None:
    assert (
        canonicalize({"b": [1, {"d": None, "c": True}], "a": "x"}) == b'{"a":"x","b":[1,{"c":true,"d":null}]}'
    )


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | st.text(alphabet=st.characters(exclude_categories=["Cs"])),
    lambda children: (
        st.lists(children)
        | st.dictionaries(st.text(alphabet=st.characters(exclude_categories=["Cs"])), children)
    ),
    max_leaves=20,
)


@given(json_values)
def test_canonical_form_parses_back_and_is_a_fixed_point(value: object) -> None:
    text = canonicalize(value)
    assert json.loads(text) == value
    assert canonicalize(json.loads(text)) == text


class Level(int, Enum):
    LOW = 1
    HUGE = 2**60


class Purpose(StrEnum):
    FAVOR = "favor"
    ODD = '\u00e9\n"q'


anything_json_like = st.recursive(
    json_like_leaves | st.sampled_from(Purpose) | st.sampled_from(Level),
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(tricky_text, children, max_size=4)
    ),
    max_leaves=20,
)


def _either(encode: object, value: object) -> bytes | str:
    try:
        return encode(value)  # type: ignore[operator,no-any-return]
    except NotCanonicalizableError:
        return "refused"


@settings(max_examples=3000)
@given(anything_json_like)
def test_the_fast_path_gives_the_generic_answer(value: object) -> None:
    """canonicalize() takes the standard library's encoder where that is already RFC 8785; it must
    produce exactly what the rule-by-rule canonicalize_generic() does, refusals included."""
    assert _either(canonicalize, value) == _either(canonicalize_generic, value)


def test_the_fast_path_sorts_non_ascii_keys_by_utf16_units() -> None:
    # U+FB01 (0xFB01) sorts after U+1F3B2 (surrogates 0xD83C...) in UTF-16, before it in code points.
    encoded = canonicalize({"\ufb01": 1, "\U0001f3b2": 2})
    assert encoded.index("\U0001f3b2".encode()) < encoded.index("\ufb01".encode())


def test_enum_members_are_their_values() -> None:
    assert canonicalize({"level": Level.LOW, "purpose": Purpose.FAVOR}) == b'{"level":1,"purpose":"favor"}'
    assert canonicalize_generic([Level.LOW, Purpose.FAVOR]) == b'[1,"favor"]'


def _walked(value: object) -> bool:
    """The fast path's domain as first written (a generator per container), before its loops."""
    if value is None or isinstance(value, str) or type(value) is bool:
        return True
    if type(value) is int:
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if type(value) is dict:
        return all(type(key) is str and key.isascii() for key in value) and all(
            _walked(item) for item in value.values()
        )
    if type(value) is list or type(value) is tuple:
        return all(_walked(item) for item in value)
    return False


@settings(max_examples=3000)
@given(anything_json_like)
def test_the_fast_paths_domain_is_as_it_was(value: object) -> None:
    """The domain test's loops take exactly what its first form took: no value loses the C encoder."""
    assert stdlib_form_is_canonical(value) == _walked(value)
