"""JSON read once, noting on the way whether its RFC 8785 bytes need a second look.

pokna_verify.crypto.canonicalize writes a value through the standard library's sorted compact encoder when the
value lies in the domain where that encoder's output already is RFC 8785 (no floats, integers within
+-(2**53 - 1), ASCII object keys, text that encodes as UTF-8), and it walks every value to find out. For
a document just read from JSON text the walk can be skipped: the decoder reports every number it reads
(hooks below), and ASCII text without \\u escapes has only ASCII keys and strings. An auditor checking a
hundred thousand signed proofs saves that walk for each one. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pokna_verify.bounded_input import bounded_float, bounded_int, loads
from pokna_verify.crypto.canonical_json import MAX_SAFE_INTEGER, encode_sorted
from pokna_verify.crypto.signing import SIGNATURE_FIELD

_SAFE_DIGITS = len(str(MAX_SAFE_INTEGER))  # 16: a number of 15 digits (or 14 and a sign) is safe


def loads_noting_plain(text: str) -> tuple[Any, bool]:
    """json.loads(text) within the verifiers' limits (pokna_verify.bounded_input.loads), and whether the value
    is plain: in the domain where sorted compact JSON is its RFC 8785 form. Raises what that raises."""
    # ASCII text without \u escapes reads as ASCII strings and keys only (the other escapes are ASCII).
    plain = text.isascii() and "\\u" not in text

    def parse_int(digits: str) -> int:
        nonlocal plain
        if len(digits) < _SAFE_DIGITS:  # nearly every number: within +-(2**53 - 1) by its length alone
            return int(digits)
        value = bounded_int(digits)
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            plain = False
        return value

    def parse_float(digits: str) -> float:
        nonlocal plain
        plain = False
        return bounded_float(digits)

    def parse_constant(name: str) -> float:  # NaN, Infinity, -Infinity
        nonlocal plain
        plain = False
        return float(name)

    value = loads(text, parse_int=parse_int, parse_float=parse_float, parse_constant=parse_constant)
    return value, plain


def plain_signed_bytes(document: Mapping[str, Any]) -> bytes:
    """pokna_verify.crypto.signing.signed_bytes(document) for a document inside a value loads_noting_plain found
    plain: every field but the signature, canonical."""
    return encode_sorted({key: value for key, value in document.items() if key != SIGNATURE_FIELD}).encode(
        "utf-8"
    )
