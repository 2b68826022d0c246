"""The service's secrets, loaded once per process: the Ed25519 signing key and the seed vault key.

Configuration supplies them in production. In development (and tests) they are generated into the data
directory on first use, with a warning, so `pokna serve` works with zero setup and restarts keep them.
Retired public keys (PEM files in `<data dir>/keys/retired/`) stay published so old proofs verify.

Bad key material is a `ServiceKeyError` naming the variable (or file) to fix and how to make a good one.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from pokna.settings import SECRETS_HINT, Environment, Settings
from pokna_verify.crypto.errors import InvalidKeyError
from pokna_verify.crypto.signing import (
    generate_signing_key,
    key_id_of,
    load_private_key_pem,
    load_public_key_pem,
    private_key_to_pem,
)
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.fairness.seed_vault import KEY_BYTES, generate_vault_key

log = logging.getLogger("pokna.keys")


class ServiceKeyError(ValueError):
    """The configured (or stored) key material is unusable; the message says which and how to fix it."""


@dataclass(frozen=True)
class ServiceKeys:
    signing_key: Ed25519PrivateKey
    key_ring: KeyRing
    seed_key: bytes

    @property
    def key_id(self) -> str:
        return key_id_of(self.signing_key.public_key())


def load_service_keys(settings: Settings) -> ServiceKeys:
    keys_dir = settings.data_dir / "keys"
    if settings.signing_key is not None:
        signing_key = _configured_signing_key(settings.signing_key.get_secret_value())
    else:
        signing_key = _development_signing_key(settings, keys_dir / "signing_key.pem")
    if settings.seed_encryption_key is not None:
        seed_key = _seed_key_from_hex(
            settings.seed_encryption_key.get_secret_value(), "POKNA_SEED_ENCRYPTION_KEY"
        )
    else:
        seed_key = _development_seed_key(settings, keys_dir / "seed_encryption_key.hex")
    retired_dir = keys_dir / "retired"
    retired = (
        [_retired_key(path) for path in sorted(retired_dir.glob("*.pem"))] if retired_dir.is_dir() else []
    )
    current_id = key_id_of(signing_key.public_key())
    retired = [key for key in retired if key_id_of(key) != current_id]
    return ServiceKeys(signing_key, KeyRing.of(signing_key.public_key(), retired), seed_key)


def _configured_signing_key(pem: str) -> Ed25519PrivateKey:
    """A PEM pasted into an env file often arrives on one line with literal `\\n`s: read it as meant."""
    if "\n" not in pem.strip() and "\\n" in pem:
        pem = pem.replace("\\n", "\n")
    try:
        return load_private_key_pem(pem.strip().encode() + b"\n")
    except InvalidKeyError as error:
        raise ServiceKeyError(
            "POKNA_SIGNING_KEY is not an Ed25519 private key in PEM (PKCS#8, from -----BEGIN PRIVATE KEY----- "
            f"to -----END PRIVATE KEY-----; {SECRETS_HINT}, or `openssl genpkey -algorithm ed25519`)"
        ) from error


def _seed_key_from_hex(text: str, source: str) -> bytes:
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise ServiceKeyError(
            f"{source} is not {KEY_BYTES * 2} hex characters ({SECRETS_HINT}, or `openssl rand -hex {KEY_BYTES}`)"
        )
    return key


def _retired_key(path: Path) -> Ed25519PublicKey:
    try:
        return load_public_key_pem(path.read_bytes())
    except (OSError, InvalidKeyError) as error:
        raise ServiceKeyError(
            f"retired key {path} is not a readable Ed25519 public key in PEM "
            "(put the retired key's public PEM there, or remove the file)"
        ) from error


def _refuse_in_production(settings: Settings, what: str) -> None:
    if settings.env is Environment.PRODUCTION:
        raise ServiceKeyError(
            f"production needs {what} from configuration; refusing to generate one ({SECRETS_HINT})"
        )


def _development_signing_key(settings: Settings, path: Path) -> Ed25519PrivateKey:
    _refuse_in_production(settings, "POKNA_SIGNING_KEY")
    if not path.exists() and _create_secret(path, private_key_to_pem(generate_signing_key())):
        log.warning(
            "generated a DEVELOPMENT signing key; set POKNA_SIGNING_KEY in production",
            extra={"path": str(path)},
        )
    try:
        return load_private_key_pem(path.read_bytes())
    except (OSError, InvalidKeyError) as error:
        raise ServiceKeyError(
            f"the development signing key {path} is unreadable (remove it to have a new one made, "
            "or set POKNA_SIGNING_KEY)"
        ) from error


def _development_seed_key(settings: Settings, path: Path) -> bytes:
    _refuse_in_production(settings, "POKNA_SEED_ENCRYPTION_KEY")
    if not path.exists() and _create_secret(path, generate_vault_key().hex().encode()):
        log.warning(
            "generated a DEVELOPMENT seed encryption key; set POKNA_SEED_ENCRYPTION_KEY in production",
            extra={"path": str(path)},
        )
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        text = ""
    return _seed_key_from_hex(text, f"the development seed key {path}")


def _create_secret(path: Path, content: bytes) -> bool:
    """Write a whole file under a temporary name, then link it into place: several workers starting at once
    all end up reading the one key that won, never a half-written or a second one. True if ours won."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
        os.chmod(temporary, 0o600)
        os.link(temporary, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(temporary)
