"""RFC 8785 JSON Canonicalization Scheme (JCS): the exact bytes a signature covers.

Signing canonical bytes instead of "whatever json.dumps produced" lets any verifier, in any language, rebuild
the signed bytes from a parsed document. Numbers follow ECMAScript's Number.prototype.toString, as the RFC
requires; integers beyond 2**53 - 1 are refused because a JavaScript verifier could not represent them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

from pokna_verify.crypto.errors import NotCanonicalizableError

MAX_SAFE_INTEGER = 2**53 - 1

_SHORT_ESCAPES = {
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "\\": "\\\\",
}


def canonicalize(value: object) -> bytes:
    """The UTF-8 bytes of `value` in RFC 8785 form.

    Signing a proof and hashing a ledger line spend most of their time here, so values in the domain
    where the standard library's sorted, compact JSON already *is* RFC 8785 go through its C encoder:
    no floats, integers within +-(2**53 - 1), ASCII object keys (code-point order is then UTF-16 order),
    and text that encodes as UTF-8 (no lone surrogates). In that domain both escape exactly the quote,
    the backslash, the short escapes (b f n r t) and other control characters as lower-case u00xx
    escapes, and nothing else. Everything else takes the general path, canonicalize_generic, which also
    refuses what has no canonical form; tests/crypto/test_crypto_canonical_json.py holds the two equal.
    """
    if stdlib_form_is_canonical(value):
        try:
            return encode_sorted(value).encode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate: the general path names it
    return canonicalize_generic(value)


encode_sorted = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, check_circular=False
).encode


def stdlib_form_is_canonical(value: object) -> bool:
    # Text subclasses (StrEnum members) encode as their text in both encoders; numbers must be exact.
    # Written out as loops, with the common leaves (text, exact integers) tested in place: every signed
    # proof and ledger line walks its whole document here first (issue 44).
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return True
    if kind is int:
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER  # type: ignore[operator]
    if kind is dict:
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str or not key.isascii():
                return False
            kind = type(item)
            if kind is int:
                if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                    return False
            elif not (kind is str or item is None or kind is bool or stdlib_form_is_canonical(item)):
                return False
        return True
    if kind is list or kind is tuple:
        for item in value:  # type: ignore[attr-defined]
            kind = type(item)
            if kind is int:
                if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                    return False
            elif not (kind is str or item is None or kind is bool or stdlib_form_is_canonical(item)):
                return False
        return True
    return isinstance(value, str)


def canonicalize_generic(value: object) -> bytes:
    """RFC 8785 written out rule by rule: the reference the fast path is tested against."""
    parts: list[str] = []
    _write(value, parts, "$")
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError as error:  # a lone surrogate slipped through a key
        raise NotCanonicalizableError("a string holds a lone UTF-16 surrogate") from error


def _write(value: object, parts: list[str], path: str) -> None:
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int):
        parts.append(_integer(value, path))
    elif isinstance(value, float):
        parts.append(format_number(value, path))
    elif isinstance(value, str):
        parts.append(_string(value, path))
    elif isinstance(value, Mapping):
        _write_object(value, parts, path)
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        parts.append("[")
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            _write(item, parts, f"{path}[{index}]")
        parts.append("]")
    else:
        raise NotCanonicalizableError(f"{path}: {type(value).__name__} has no JSON form")


def _write_object(value: Mapping[object, object], parts: list[str], path: str) -> None:
    for key in value:
        if not isinstance(key, str):
            raise NotCanonicalizableError(f"{path}: object keys are strings, not {key!r}")
    # UTF-16BE bytes compare exactly like the UTF-16 code units RFC 8785 section 3.2.3 sorts by.
    keys = sorted((str(key) for key in value), key=lambda key: _utf16_units(key, path))
    parts.append("{")
    for index, key in enumerate(keys):
        if index:
            parts.append(",")
        parts.append(_string(key, path))
        parts.append(":")
        _write(value[key], parts, f"{path}.{key}")
    parts.append("}")


def _utf16_units(key: str, path: str) -> bytes:
    try:
        return key.encode("utf-16-be")
    except UnicodeEncodeError as error:
        raise NotCanonicalizableError(f"{path}: key {key!r} holds a lone UTF-16 surrogate") from error


def _integer(value: int, path: str) -> str:
    if abs(value) > MAX_SAFE_INTEGER:
        raise NotCanonicalizableError(
            f"{path}: integer {value} is outside the I-JSON safe range of +-(2**53 - 1)"
        )
    return int.__repr__(value)  # the digits, also for an IntEnum member (whose str() may be its name)


def _string(value: str, path: str) -> str:
    out = ['"']
    for ch in str.__str__(value):  # the text itself, whatever a str subclass does with iteration
        escaped = _SHORT_ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        elif "\ud800" <= ch <= "\udfff":
            raise NotCanonicalizableError(f"{path}: string holds a lone UTF-16 surrogate")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def format_number(value: float, path: str = "$") -> str:
    """ECMAScript Number::toString. Python's repr already yields the shortest round-tripping digits."""
    if math.isnan(value) or math.isinf(value):
        raise NotCanonicalizableError(f"{path}: {value} has no JSON form")
    if value == 0:
        return "0"  # also -0
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest_digits(abs(value))
    k = len(digits)
    n = exponent + k  # value = 0.digits * 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return sign + body


def _shortest_digits(value: float) -> tuple[str, int]:
    """(digits, exponent) with value == int(digits) * 10**exponent and no trailing zeros in digits."""
    mantissa, _, exp_text = repr(value).partition("e")
    exponent = int(exp_text) if exp_text else 0
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    exponent -= len(fraction)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    return stripped, exponent
