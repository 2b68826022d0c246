"""The `pokna-hmac-sha256-v1` roll stream: seeds, the commitment and the face of roll number n.

The byte generator is Stake.com's (HMAC-SHA256 keyed by the server seed over "client:nonce:cursor", first
four bytes as a base-256 fraction), so any third-party Stake verifier reproduces `f` and therefore the face.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pokna_verify.fairness.errors import InvalidClientSeedError, InvalidNonceError, InvalidServerSeedError
from pokna_verify.game.cube import Color, color_of

PROTOCOL = "pokna-hmac-sha256-v1"

SERVER_SEED_BYTES = 32
CLIENT_SEED_MAX_LENGTH = 64
# Unreserved URI characters: safe in URLs, JSON, shells and log lines, and never "\n" (the join separator).
CLIENT_SEED_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-"
CLIENT_SEED_SEPARATOR = "\n"
# Stake's generator reads 4 bytes per float from a "cursor"; a roll needs one float, so the cursor is 0.
CURSOR = 0

# HMAC's inner and outer pads (RFC 2104), as byte translation tables: key.translate(_XOR_IPAD) = key ^ ipad.
_XOR_IPAD = bytes(byte ^ 0x36 for byte in range(256))
_XOR_OPAD = bytes(byte ^ 0x5C for byte in range(256))
_FIRST_FOUR_BYTES = struct.Struct(">I")  # the base-256 fraction's numerator, as face_of_digest reads it
_LOWER_HEX_64 = re.compile(r"[0-9a-f]{64}")  # a server seed's text, and a SHA-256 digest in hex
_CLIENT_SEED_RE = re.compile(r"[A-Za-z0-9._~-]{1,64}")


@dataclass(frozen=True, slots=True)
class Roll:
    """One roll of the chance cube. `f` is exact: a 32-bit integer over 2**32 fits a double."""

    nonce: int
    digest: bytes
    f: float
    face: int
    color: Color


def generate_server_seed() -> str:
    """A fresh seed per game, so revealing one game's seed tells nothing about any other game."""
    return secrets.token_hex(SERVER_SEED_BYTES)


def is_server_seed(value: object) -> bool:
    return isinstance(value, str) and _LOWER_HEX_64.fullmatch(value) is not None


def is_sha256_hex(value: object) -> bool:
    return isinstance(value, str) and _LOWER_HEX_64.fullmatch(value) is not None


def require_server_seed(server_seed: str) -> str:
    """Only one spelling of a seed is valid, so the hash of its text is a commitment to exactly one key."""
    if not is_server_seed(server_seed):
        raise InvalidServerSeedError("a server seed is 64 lowercase hexadecimal characters")
    return server_seed


def server_seed_hash(server_seed: str) -> str:
    """The commitment hashes the seed's hex *text*, because that text is what players paste into verifiers."""
    return hashlib.sha256(require_server_seed(server_seed).encode("ascii")).hexdigest()


def client_seed_problem(client_seed: object) -> str | None:
    """Why `client_seed` is not a valid client seed, or None if it is; shared by the API and the verifier."""
    if not isinstance(client_seed, str):
        return "a client seed is a string"
    if not 1 <= len(client_seed) <= CLIENT_SEED_MAX_LENGTH:
        return f"a client seed has 1 to {CLIENT_SEED_MAX_LENGTH} characters, not {len(client_seed)}"
    if _CLIENT_SEED_RE.fullmatch(client_seed) is None:
        bad = next(ch for ch in client_seed if ch not in CLIENT_SEED_ALPHABET)
        return f"a client seed uses only A-Z a-z 0-9 . _ ~ -, not {bad!r}"
    return None


def require_client_seed(client_seed: str) -> str:
    problem = client_seed_problem(client_seed)
    if problem is not None:
        raise InvalidClientSeedError(problem)
    return client_seed


def generate_client_seed(random_bytes: Callable[[int], bytes] = secrets.token_bytes) -> str:
    """For seats that never chose one: secrets.token_urlsafe(16), from `random_bytes` (a decision's own
    source, pokna.dealer.action.locked.Env). Its alphabet (A-Z a-z 0-9 - _) is inside ours."""
    return base64.urlsafe_b64encode(random_bytes(16)).rstrip(b"=").decode("ascii")


def game_client_seed(client_seeds_in_seat_order: Sequence[str]) -> str:
    """One value mixing every seat's seed: the operator, not knowing them in advance, cannot grind rolls."""
    if not client_seeds_in_seat_order:
        raise InvalidClientSeedError("a game has at least one seat")
    for seed in client_seeds_in_seat_order:
        require_client_seed(seed)
    joined = CLIENT_SEED_SEPARATOR.join(client_seeds_in_seat_order)
    return hashlib.sha256(joined.encode("ascii")).hexdigest()


def roll_digest(server_seed: str, client_seed: str, nonce: int) -> bytes:
    """`client_seed` is the game client seed; free text is accepted so Stake-style test vectors reproduce."""
    if isinstance(nonce, bool) or not isinstance(nonce, int) or nonce < 0:
        raise InvalidNonceError(f"a nonce is a non-negative integer, not {nonce!r}")
    key = require_server_seed(server_seed).encode("ascii")
    message = f"{client_seed}:{nonce}:{CURSOR}".encode()
    return hmac.new(key, message, hashlib.sha256).digest()


def face_of_digest(digest: bytes) -> int:
    """floor(f * 6) + 1 computed in integers, so no float rounding can ever move a face."""
    return (int.from_bytes(digest[:4], "big") * 6 >> 32) + 1


def faces(server_seed: str, client_seed: str, nonces: Sequence[int]) -> list[int]:
    """The faces of many rolls of one game: the same as roll(...).face for each nonce (a property test
    holds them equal), several times as fast, as an auditor re-checking every roll of a year needs.

    HMAC-SHA256(key, m) is SHA256((key ^ opad) || SHA256((key ^ ipad) || m)), the key zero-padded to the
    64-byte block. A server seed's text is exactly 64 bytes, so both padded keys and the message prefix
    "client_seed:" shared by every roll of the game are hashed once, and each roll only continues copies
    of those states with "nonce:cursor" and the inner digest: three compression rounds instead of five,
    and no HMAC set-up per roll."""
    key = require_server_seed(server_seed).encode("ascii")
    for nonce in nonces:
        if isinstance(nonce, bool) or not isinstance(nonce, int) or nonce < 0:
            raise InvalidNonceError(f"a nonce is a non-negative integer, not {nonce!r}")
    inner = hashlib.sha256(key.translate(_XOR_IPAD))
    inner.update(f"{client_seed}:".encode())
    outer = hashlib.sha256(key.translate(_XOR_OPAD))
    unpack = _FIRST_FOUR_BYTES.unpack_from
    result = []
    for nonce in nonces:
        message = inner.copy()
        message.update(b"%d:%d" % (nonce, CURSOR))
        digest = outer.copy()
        digest.update(message.digest())
        result.append((unpack(digest.digest())[0] * 6 >> 32) + 1)
    return result


def roll(server_seed: str, client_seed: str, nonce: int) -> Roll:
    digest = roll_digest(server_seed, client_seed, nonce)
    face = face_of_digest(digest)
    return Roll(
        nonce=nonce,
        digest=digest,
        f=int.from_bytes(digest[:4], "big") / 2**32,
        face=face,
        color=color_of(face),
    )
