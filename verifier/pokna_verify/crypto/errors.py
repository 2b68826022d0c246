"""Typed errors of the crypto package, each with a stable `code`."""

from __future__ import annotations


class CryptoError(ValueError):
    """Every error this package raises on bad input; a ValueError, so callers may treat it as one."""

    code = "crypto_error"


class NotCanonicalizableError(CryptoError):
    """The value has no RFC 8785 form (NaN, a lone surrogate, an unsafe integer, a non-string key...)."""

    code = "not_canonicalizable"


class InvalidKeyError(CryptoError):
    code = "invalid_key"
