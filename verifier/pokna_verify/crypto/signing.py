"""Ed25519 signatures over the RFC 8785 bytes of a document without its `signature` field.

Signing canonical JSON (not a detached blob) keeps the signed document readable and lets anyone rebuild the
signed bytes from the JSON alone. The `key_id` is inside the signed bytes, so it cannot be swapped to point
a verifier at another key. Keys travel as PEM bytes; reading files is the caller's job.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from pokna_verify.crypto.canonical_json import canonicalize
from pokna_verify.crypto.encoding import b64url_decode, b64url_encode
from pokna_verify.crypto.errors import InvalidKeyError

ALGORITHM = "Ed25519"
KEY_ID_PREFIX = "ed25519:"
SIGNATURE_FIELD = "signature"
KEY_ID_FIELD = "key_id"


def generate_signing_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def raw_public_key(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id_of(public_key: Ed25519PublicKey) -> str:
    """Derived from the key itself, so a key id can never silently name a different key."""
    return KEY_ID_PREFIX + hashlib.sha256(raw_public_key(public_key)).hexdigest()[:16]


def public_key_from_raw(raw: bytes) -> Ed25519PublicKey:
    if len(raw) != 32:
        raise InvalidKeyError(f"an Ed25519 public key is 32 bytes, not {len(raw)}")
    return Ed25519PublicKey.from_public_bytes(raw)


def public_key_to_b64url(public_key: Ed25519PublicKey) -> str:
    return b64url_encode(raw_public_key(public_key))


def public_key_from_b64url(text: str) -> Ed25519PublicKey:
    try:
        raw = b64url_decode(text)
    except ValueError as error:
        raise InvalidKeyError(f"public key: {error}") from error
    return public_key_from_raw(raw)


def private_key_to_pem(private_key: Ed25519PrivateKey, password: bytes | None = None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    )
    return private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


def public_key_to_pem(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def load_private_key_pem(pem: bytes, password: bytes | None = None) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(pem, password=password)
    except (ValueError, TypeError) as error:
        raise InvalidKeyError(f"not a readable PEM private key: {error}") from error
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidKeyError(f"expected an Ed25519 private key, got {type(key).__name__}")
    return key


def load_public_key_pem(pem: bytes) -> Ed25519PublicKey:
    """Also accepts a private key PEM and returns its public half, which is handy for operators."""
    try:
        key: object = serialization.load_pem_public_key(pem)
    except ValueError:
        key = load_private_key_pem(pem).public_key()
    if not isinstance(key, Ed25519PublicKey):
        raise InvalidKeyError(f"expected an Ed25519 public key, got {type(key).__name__}")
    return key


def signed_bytes(document: Mapping[str, Any]) -> bytes:
    """What the signature covers: every field but `signature`, canonicalized."""
    return canonicalize({key: value for key, value in document.items() if key != SIGNATURE_FIELD})


def sign_document(document: Mapping[str, Any], private_key: Ed25519PrivateKey) -> dict[str, Any]:
    """A copy of `document` with `key_id` set to the signer's and `signature` over everything else."""
    unsigned = {key: value for key, value in document.items() if key != SIGNATURE_FIELD}
    unsigned[KEY_ID_FIELD] = key_id_of(private_key.public_key())
    signature = private_key.sign(canonicalize(unsigned))
    return {**unsigned, SIGNATURE_FIELD: b64url_encode(signature)}


def signature_problem(
    document: Mapping[str, Any], public_key: Ed25519PublicKey, *, payload: bytes | None = None
) -> str | None:
    """Why the document's signature does not verify under `public_key`, or None if it does. `payload`:
    signed_bytes(document) when the caller already has them (an auditor's tool checking many proofs)."""
    signature_text = document.get(SIGNATURE_FIELD)
    if not isinstance(signature_text, str):
        return "the document has no signature string"
    try:
        signature = b64url_decode(signature_text)
    except ValueError as error:
        return f"signature is {error}"
    if len(signature) != 64:
        return f"an Ed25519 signature is 64 bytes, this one is {len(signature)}"
    try:
        payload = signed_bytes(document) if payload is None else payload
    except ValueError as error:
        return f"the document cannot be canonicalized: {error}"
    try:
        public_key.verify(signature, payload)
    except InvalidSignature:
        return f"signature does not verify with key {key_id_of(public_key)}"
    return None


def verify_document(document: Mapping[str, Any], public_key: Ed25519PublicKey) -> bool:
    return signature_problem(document, public_key) is None
