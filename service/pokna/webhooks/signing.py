"""Standard Webhooks signatures and the endpoints' secrets.

A secret is `whsec_` + base64 of 24 random bytes. A message is signed as
`v1,` + base64(HMAC-SHA256(secret bytes, "{webhook-id}.{webhook-timestamp}.{body}")); during a rotation's
overlap the header carries one signature per live secret, separated by a space, and a receiver accepts
the message if any of them verifies.

At rest a secret is sealed with the service's seed encryption key (AES-256-GCM, the endpoint's id as
associated data), so a copy of the database alone cannot forge a tenant's webhooks.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Sequence

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SECRET_PREFIX = "whsec_"  # noqa: S105 (the Standard Webhooks prefix, not a secret)
SECRET_BYTES = 24
_SEAL_VERSION = "v1"
_NONCE_BYTES = 12
_AD_PREFIX = b"pokna-webhook-secret-v1\x00"


def generate_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signature_header(live_secrets: Sequence[str], message_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` header: one `v1,` signature per live secret, the newest first."""
    return " ".join(sign(secret, message_id, timestamp, body) for secret in live_secrets)


def seal_secret(secret: str, key: bytes, endpoint_id: str) -> str:
    nonce = secrets.token_bytes(_NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, secret.encode("ascii"), _AD_PREFIX + endpoint_id.encode())
    return ".".join((_SEAL_VERSION, _b64(nonce), _b64(sealed)))


def open_secret(token: str, key: bytes, endpoint_id: str) -> str:
    version, nonce_text, sealed_text = token.split(".")
    if version != _SEAL_VERSION:
        raise ValueError(f"unknown sealed secret version {version!r}")
    plain = AESGCM(key).decrypt(_unb64(nonce_text), _unb64(sealed_text), _AD_PREFIX + endpoint_id.encode())
    return plain.decode("ascii")


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
