"""pokna_verify.bounded_input at its edges: what it reads is what json.loads reads, exactly up to each limit
and not a byte past it; brackets and digits inside strings count for nothing; a line is read no further
than its limit. What the commands say of each refusal: test_fairness_hostile_inputs.py,
tests/cli/test_audit_hostile_inputs.py."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pokna_verify import bounded_input
from pokna_verify.bounded_input import (
    MAX_DEPTH,
    MAX_NUMBER_DIGITS,
    InputLimitError,
    deeper_than,
    duplicate_key,
    finish_line,
    loads,
    lone_surrogate,
    next_line,
)
from support.json_strategies import json_like


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def _same(left: Any, right: Any) -> bool:
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left):
        return math.isnan(right)
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[key], right[key]) for key in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_same, left, right))
    return type(left) is type(right) and left == right


@given(json_like(max_leaves=40), st.integers(0, 3))
def test_what_the_service_could_write_reads_as_json_loads_reads_it(value: Any, indent: int) -> None:
    text = json.dumps(value, indent=indent or None)
    assume(lone_surrogate(value) is None)  # never signed nor hashed (RFC 8785), so never written; refused
    assert _same(loads(text), json.loads(text))
    assert deeper_than(text, _depth(value)) is False
    if _depth(value) > 0:
        assert deeper_than(text, _depth(value) - 1) is True


@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_nesting_is_read_to_the_limit_and_no_deeper(opening: str) -> None:
    closing = "]" if opening == "[" else "}"
    at_the_limit = opening * MAX_DEPTH + "1" + closing * MAX_DEPTH
    assert _depth(loads(at_the_limit)) == MAX_DEPTH
    with pytest.raises(InputLimitError, match=f"^JSON nested deeper than {MAX_DEPTH} levels"):
        loads("[" + at_the_limit + "]")
    with pytest.raises(InputLimitError, match=f"^JSON nested deeper than {MAX_DEPTH} levels"):
        loads("[" * 100_000 + "]" * 100_000)


def test_brackets_and_digits_inside_strings_count_for_nothing() -> None:
    text = json.dumps({"note": "[{" * 500 + '\\"]' + "9" * 5000, "items": [[1], [2]]})
    assert loads(text) == json.loads(text)


def test_numbers_are_read_to_the_limit_and_no_longer() -> None:
    widest = "9" * MAX_NUMBER_DIGITS
    fraction = "0." + widest[1:]  # a float's digits count too
    assert loads(f"[{widest}, -{widest}, {fraction}]") == [int(widest), -int(widest), float(fraction)]
    for number in ("9" * (MAX_NUMBER_DIGITS + 1), "1." + "0" * MAX_NUMBER_DIGITS, "9" * 5000):
        with pytest.raises(InputLimitError, match=r"^a number of [0-9,]+ digits, more than the 100"):
            loads(f'{{"amount": {number}}}')


def test_a_key_named_twice_at_any_depth_is_refused_naming_where() -> None:
    assert loads('{"a": {"b": 1}, "b": {"a": 2}}') == {"a": {"b": 1}, "b": {"a": 2}}
    with pytest.raises(
        InputLimitError,
        match=r'^the key "amount" appears more than once in one object \(at /postings/1/amount\)',
    ):
        loads('{"postings": [{"amount": 1}, {"amount": 999, "amount": 5}]}')
    assert duplicate_key('{"a/b": {"~": 1, "~": 2}}') == ("a/b", "~")
    assert duplicate_key('{"a": 1}') is None


def test_a_lone_surrogate_anywhere_is_refused_naming_where_and_a_pair_is_read() -> None:
    assert loads('{"die": "\\ud83c\\udfb2", "\\ud83c\\udfb2": "\\u00e9\\uD7FF \\\\ud800"}') == {
        "die": "\U0001f3b2",
        "\U0001f3b2": "\u00e9\ud7ff \\ud800",
    }
    for text, where in (
        ('{"seeds": [{"client_seed": "a\\ud800"}]}', "/seeds/0/client_seed"),
        ('{"a": {"\\uDFFF": 1}}', "/a"),
        ('"\\udc00\\ud800"', "/"),
        (b'{"id": "\xed\xa0\x80"}', "/id"),  # UTF-8 bytes of U+D800, which surrogatepass decodes
    ):
        with pytest.raises(
            InputLimitError, match=f"^a string holds a lone UTF-16 surrogate \\(at {where}\\)"
        ):
            loads(text)


def test_a_line_is_read_to_the_limit_and_no_further(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded_input, "MAX_LINE_BYTES", 8)
    stream = io.BytesIO(b"12345678\n123456789\nrest")
    assert next_line(stream, 1) == b"12345678\n"
    with pytest.raises(InputLimitError, match=r"^line 2 is longer than 8 bytes"):
        next_line(stream, 2)
    assert stream.tell() == 18  # nine bytes of line 2 read: one past the limit, not its newline
    partial = io.BytesIO(b"5678\nnext")
    assert finish_line(partial, 4, 7) == b"5678\n"  # 8 bytes in all: at the limit
    with pytest.raises(InputLimitError, match=r"^line 9 is longer"):
        finish_line(io.BytesIO(b"56789"), 4, 9)
    assert finish_line(io.BytesIO(b"5678"), 4, 3) == b"5678"  # the file's end, at the limit


def _walked_duplicate(text: str) -> tuple[str | int, ...] | None:
    """duplicate_key as first written: every document read into its members and walked."""
    try:
        document = json.loads(
            text,
            object_pairs_hook=bounded_input._Members,
            parse_int=lambda _: None,
            parse_float=lambda _: None,
        )
    except (ValueError, RecursionError):
        return None
    pending: list[tuple[tuple[str | int, ...], Any]] = [((), document)]
    while pending:
        location, node = pending.pop()
        if isinstance(node, bounded_input._Members):
            seen: set[str] = set()
            for key, value in node:
                if key in seen:
                    return (*location, key)
                seen.add(key)
                pending.append(((*location, key), value))
        elif isinstance(node, list):
            pending.extend(((*location, index), value) for index, value in enumerate(node))
    return None


def _text(node: Any) -> str:
    if isinstance(node, tuple):  # an object as written: its members, repeats and all
        return "{" + ",".join(f"{json.dumps(key)}:{_text(value)}" for key, value in node) + "}"
    if isinstance(node, list):
        return "[" + ",".join(_text(item) for item in node) + "]"
    return json.dumps(node)


written = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(st.tuples(st.sampled_from(["a", "b", "c", "é"]), children), max_size=4).map(tuple)
    ),
    max_leaves=25,
)


@settings(max_examples=2000)
@given(written, st.integers(min_value=0, max_value=400))
def test_a_repeated_key_is_found_where_the_walk_finds_it(document: Any, cut: int) -> None:
    """The first reading that only asks whether a key repeats finds what the whole walk finds, in whole
    documents and in documents cut short (no JSON: None)."""
    text = _text(document)
    for sent in (text, text[:cut]):
        assert duplicate_key(sent) == _walked_duplicate(sent)
