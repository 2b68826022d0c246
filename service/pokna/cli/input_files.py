"""Reading what a user hands the offline verifiers. Anything unreadable is "unusable input" (exit 2),
which is a different answer from "invalid" (exit 1): the user gave us nothing we could judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from pokna.crypto.signing import load_public_key_pem, public_key_from_b64url

EXIT_UNUSABLE = 2


class UnusableInputError(Exception):
    pass


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UnusableInputError(f"cannot read the {what} file {path}: {error.strerror or error}") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UnusableInputError(f"the {what} file {path} is not JSON: {error}") from error
    if not isinstance(document, dict):
        raise UnusableInputError(f"the {what} file {path} holds JSON but not an object")
    return document


def read_public_key(path: Path) -> Ed25519PublicKey:
    """PEM, or the base64url of the raw 32 bytes as GET /v1/fairness/keys publishes it."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UnusableInputError(
            f"cannot read the public key file {path}: {error.strerror or error}"
        ) from error
    if b"-----BEGIN" in data:
        return load_public_key_pem(data)
    return public_key_from_b64url(data.decode("ascii", "replace").strip())
