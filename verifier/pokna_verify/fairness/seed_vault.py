"""Server seeds at rest: AES-256-GCM, bound to their game, so a database leak alone reveals no seed.

A leaked unrevealed seed would let its holder predict every roll of a live game, so the database stores only
a sealed token. The game id is associated data: a token copied onto another game's row fails to open rather
than quietly swapping seeds. Token: "v1." + base64url(12-byte nonce) + "." + base64url(ciphertext || tag).
"""

from __future__ import annotations

import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from pokna_verify.crypto.encoding import b64url_decode, b64url_encode
from pokna_verify.fairness.errors import SeedVaultError
from pokna_verify.fairness.protocol import require_server_seed

TOKEN_VERSION = "v1"  # noqa: S105 (a format tag, not a secret)
KEY_BYTES = 32
NONCE_BYTES = 12
_AD_PREFIX = b"pokna-seed-v1\x00"


def generate_vault_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


def seal_server_seed(server_seed: str, key: bytes, game_id: str) -> str:
    aead = _aead(key)
    # Random nonces: 2**32 seals per key stay far below the risk of a collision.
    nonce = secrets.token_bytes(NONCE_BYTES)
    sealed = aead.encrypt(nonce, require_server_seed(server_seed).encode("ascii"), _associated_data(game_id))
    return f"{TOKEN_VERSION}.{b64url_encode(nonce)}.{b64url_encode(sealed)}"


def open_server_seed(token: str, key: bytes, game_id: str) -> str:
    aead = _aead(key)
    version, _, rest = token.partition(".")
    nonce_text, _, sealed_text = rest.partition(".")
    if version != TOKEN_VERSION:
        raise SeedVaultError(f"unknown seed token version {version!r}")
    try:
        nonce, sealed = b64url_decode(nonce_text), b64url_decode(sealed_text)
    except ValueError as error:
        raise SeedVaultError("malformed seed token") from error
    if len(nonce) != NONCE_BYTES:
        raise SeedVaultError("malformed seed token")
    try:
        plain = aead.decrypt(nonce, sealed, _associated_data(game_id))
    except InvalidTag as error:
        raise SeedVaultError("the seed token does not open with this key for this game") from error
    return plain.decode("ascii")


def _aead(key: bytes) -> AESGCM:
    if len(key) != KEY_BYTES:
        raise SeedVaultError(f"the seed vault key is {KEY_BYTES} bytes, not {len(key)}")
    return AESGCM(key)


def _associated_data(game_id: str) -> bytes:
    return _AD_PREFIX + game_id.encode("utf-8")
