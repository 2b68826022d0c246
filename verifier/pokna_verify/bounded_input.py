"""What the verifiers will read of what they are handed: JSON bounded in size, depth and number length, with
no key named twice in one object and no string that is not text, and lines of bounded length.

`json.loads` alone turns a 100,000-deep array into a RecursionError and an integer of 5,000 digits into
Python's own 4,300-digit ValueError (tracebacks, not answers), and it keeps the last of two equal keys: a
proof with two `server_seed`s, or a posting with two `amount`s, verifies as the one value while a first-wins
reader (a proxy, a log, the auditor's own tool) sees the other. The service refuses such request bodies for
that reason (pokna.api.unambiguous_json); the verifiers refuse such input the same way, as unusable (exit 2),
naming the limit. Every proof, key ring, receipt, chain, checkpoint and line of an export or bundle is read
through `loads`; every line of a file or pipe through `finish_line`, so neither a file nor a pipe without a
newline (/dev/zero) is read into memory whole.

The limits are far above anything the service writes: its documents nest 5 deep, its numbers are at most 19
digits (BIGINT), a proof is a few kilobytes and a bundle's longest line (a game and its proof) a few more.
Pure, but for reading a line from the stream it is given."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import accumulate
from typing import Any, BinaryIO

MIB = 1024 * 1024
MAX_DOCUMENT_BYTES = 16 * MIB
"""One document: a proof, a link, a key ring, a receipt, a chain's /info, a checkpoint, a key file, an answer."""
MAX_LINE_BYTES = 16 * MIB
"""One line of a ledger export or an audit bundle (a game's line carries its whole proof); a file holds any
number of them, read as a stream."""
MAX_DEPTH = 64
MAX_NUMBER_DIGITS = 100


class InputLimitError(Exception):
    """Input the verifiers will not read: over a limit, or ambiguous. Not a finding (nothing was judged), so
    unusable input; raised through the checks, and from a worker process, to the command that names the
    input."""


def loads(
    text: str | bytes,
    *,
    parse_int: Callable[[str], Any] | None = None,
    parse_float: Callable[[str], Any] | None = None,
    parse_constant: Callable[[str], Any] | None = None,
) -> Any:
    """json.loads(text) within the limits, or InputLimitError; not JSON raises what json.loads raises.
    A `parse_int` or `parse_float` given bounds a number's length itself, through `bounded_int` or
    `bounded_float` (a hook wrapped in another would cost a call per number of every line)."""
    if isinstance(text, bytes):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    decoder = _DECODER
    if parse_int is not None or parse_float is not None or parse_constant is not None:
        decoder = json.JSONDecoder(
            object_pairs_hook=_one_of_each,
            parse_int=parse_int or bounded_int,
            parse_float=parse_float or bounded_float,
            parse_constant=parse_constant,
        )
    try:
        value = decoder.decode(text)
    except RecursionError:  # the C decoder's own guard, far past MAX_DEPTH: a hostile nesting
        raise InputLimitError(_too_deep()) from None
    except _RepeatedKey as repeated:
        raise InputLimitError(_repeated(text, repeated.key)) from None
    if isinstance(value, (dict, list)) and deeper_than(text, MAX_DEPTH):
        raise InputLimitError(_too_deep())
    if _may_hold_a_surrogate(text):
        surrogate = lone_surrogate(value)
        if surrogate is not None:
            raise InputLimitError(_not_text(surrogate))
    return value


def bounded_int(number: str) -> int:
    """int(number), for a JSON integer within MAX_NUMBER_DIGITS: no longer one is converted (Python's own
    guard is at 4,300 digits, and the conversion's cost grows with the square of the length)."""
    if len(number) > MAX_NUMBER_DIGITS:
        _refuse_long(number)
    return int(number)


def bounded_float(number: str) -> float:
    if len(number) > MAX_NUMBER_DIGITS:
        _refuse_long(number)
    return float(number)


def deeper_than(text: str | bytes, limit: int) -> bool:
    """Whether JSON `text` (already read, so well formed) nests deeper than `limit`. Cheap when it holds at
    most `limit` brackets (nearly every line); otherwise its strings are set aside and the brackets counted."""
    if isinstance(text, bytes):
        if text.count(b"[") + text.count(b"{") <= limit:
            return False
        text = text.decode("utf-8", "replace")
    elif text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_A_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0) > limit


def finish_line(stream: BinaryIO, started: int, number: int) -> bytes:
    """The rest of line `number` (up to its newline, or the end), of which `started` bytes were read already;
    InputLimitError once the line is past MAX_LINE_BYTES, without reading any further."""
    rest = stream.readline(max(MAX_LINE_BYTES - started, 0) + 1)
    if started + len(rest) - rest.endswith(b"\n") > MAX_LINE_BYTES:
        raise InputLimitError(
            f"line {number} is longer than {describe_bytes(MAX_LINE_BYTES)}, the most the verifiers read of one line"
        )
    return rest


def next_line(stream: BinaryIO, number: int) -> bytes:
    """Line `number`, read whole from where the stream stands (b"" at the end), within MAX_LINE_BYTES."""
    return finish_line(stream, 0, number)


def on_line(number: int, error: InputLimitError) -> InputLimitError:
    return InputLimitError(f"line {number}: {error}")


def describe_bytes(size: int) -> str:
    return f"{size // MIB} MiB ({size:,} bytes)" if size % MIB == 0 else f"{size:,} bytes"


def _nothing(_literal: str) -> None:
    return None


def duplicate_key(text: str | bytes) -> tuple[str | int, ...] | None:
    """Where the first repeated key is (the key last), or None when no object names a key twice or `text` is
    not JSON at all: the same walk as the service's edge (pokna.api.unambiguous_json). Numbers and depth are
    other checks' limits: a repeated key is found beside a number of any size."""
    try:  # only the keys matter: numbers of any size are read as nothing, so a huge one cannot hide a key
        # Most documents repeat no key: a first reading only asks each object whether it does, in the
        # parser's own pass, and only a document that does is read again and walked to say where.
        json.loads(text, object_pairs_hook=_refuse_repeats, parse_int=_nothing, parse_float=_nothing)
        return None
    except _Repeated:
        pass
    except (ValueError, RecursionError):
        return None
    try:
        document = json.loads(text, object_pairs_hook=_Members, parse_int=_nothing, parse_float=_nothing)
    except (ValueError, RecursionError):
        return None
    pending: list[tuple[tuple[str | int, ...], Any]] = [((), document)]
    while pending:
        location, node = pending.pop()
        if isinstance(node, _Members):
            seen: set[str] = set()
            for key, value in node:
                if key in seen:
                    return (*location, key)
                seen.add(key)
                pending.append(((*location, key), value))
        elif isinstance(node, list):
            pending.extend(((*location, index), value) for index, value in enumerate(node))
    return None


def lone_surrogate(value: Any) -> tuple[str | int, ...] | None:
    """Where the first string holding a lone UTF-16 surrogate is (a key: the object it names), or None. JSON
    may write `\\ud800` alone; Python reads it into a str that UTF-8 cannot carry, so hashing, signing
    checks and printing it raise UnicodeEncodeError, and other readers refuse it or read U+FFFD instead."""
    pending: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while pending:
        location, node = pending.pop()
        if isinstance(node, str):
            if not _is_text(node):
                return location
        elif isinstance(node, dict):
            for key, item in node.items():
                if not _is_text(key):
                    return location
                pending.append(((*location, key), item))
        elif isinstance(node, list):
            pending.extend(((*location, index), item) for index, item in enumerate(node))
    return None


def json_pointer(location: tuple[str | int, ...]) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in location)


# --- the hooks -------------------------------------------------------------------------------------------

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


class _Members(list[tuple[str, Any]]):
    """A JSON object as the members it was written with, duplicates and all."""


class _Repeated(Exception):
    """An object names a key twice (not a ValueError: that is a document that is no JSON)."""


def _refuse_repeats(members: list[tuple[str, Any]]) -> None:
    if len(members) > 1 and len({key for key, _ in members}) < len(members):
        raise _Repeated


def _one_of_each(members: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(members)
    if len(document) < len(members):
        seen: set[str] = set()
        for key, _ in members:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return document


def _refuse_long(number: str) -> None:
    digits = sum(character.isdigit() for character in number)
    if digits > MAX_NUMBER_DIGITS:
        raise InputLimitError(
            f"a number of {digits:,} digits, more than the {MAX_NUMBER_DIGITS} the verifiers read"
        )


# One decoder for every line: json.loads(text, **hooks) would build one (and its scanner) per call.
_DECODER = json.JSONDecoder(object_pairs_hook=_one_of_each, parse_int=bounded_int, parse_float=bounded_float)


def _may_hold_a_surrogate(text: str) -> bool:
    """Cheap, and true of nearly no line: a lone surrogate comes from a `\\udXXX` escape, or from
    bytes decoded with surrogatepass. It runs on every line of an audit: one search for `\\u` (which the
    service's exports nearly never hold: PostgreSQL writes text as UTF-8) rather than two for `\\ud` and
    `\\uD`, and for a line that is not ASCII a UTF-8 encoding, about three times as fast as a search."""
    if "\\u" in text and ("\\ud" in text or "\\uD" in text):
        return True
    return not text.isascii() and not _is_text(text)


def _is_text(string: str) -> bool:
    try:
        string.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _not_text(location: tuple[str | int, ...]) -> str:
    return (
        f"a string holds a lone UTF-16 surrogate (at {json_pointer(location) or '/'}), which is not text: "
        "refused, since readers differ on what it says"
    )


def _too_deep() -> str:
    return f"JSON nested deeper than {MAX_DEPTH} levels, the most the verifiers read"


def _repeated(text: str | bytes, key: str) -> str:
    location = duplicate_key(text)
    where = f" (at {json_pointer(location)})" if location is not None else ""
    return (
        f'the key "{key[:80]}" appears more than once in one object{where}: duplicate keys are refused, '
        "since readers differ on which one counts"
    )
