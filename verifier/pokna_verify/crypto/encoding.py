"""Unpadded base64url (RFC 4648 section 5), the text form of signatures, public keys and sealed seeds."""

from __future__ import annotations

import base64
import binascii
import re

_B64URL_RE = re.compile(r"[A-Za-z0-9_-]*")


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Strict: one spelling per byte string, so a re-encoded signature cannot pass as a different document."""
    if _B64URL_RE.fullmatch(text) is None or len(text) % 4 == 1:
        raise ValueError("not unpadded base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as error:
        raise ValueError("not unpadded base64url") from error
    if b64url_encode(data) != text:
        raise ValueError("not the canonical base64url spelling")
    return data
