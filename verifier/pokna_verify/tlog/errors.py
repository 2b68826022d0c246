"""Typed errors of the log package, each with a stable `code` a report or a problem+json can carry."""

from __future__ import annotations


class LogError(ValueError):
    """Every error this package raises on bad input; a ValueError, so callers may treat it as one."""

    code = "log_error"


class ProofError(LogError):
    """An inclusion or consistency proof does not join what it claims to join."""

    code = "proof_failed"


class BadSizeError(LogError):
    """A leaf index or tree size outside the tree it is asked of: no proof exists, so none is made."""

    code = "bad_size"


class MalformedNoteError(LogError):
    """Text that is not a signed note (C2SP signed-note) or not a checkpoint (C2SP tlog-checkpoint)."""

    code = "malformed_note"


class SignatureError(LogError):
    """A note carries no signature that verifies with the key it is checked against."""

    code = "bad_signature"
