"""C2SP signed-note: text, a blank line, then one line per signature, "— <name> <base64(key hash || sig)>".

The format Go's checksum database, Sigsum and Rekor v2 sign their checkpoints in, so any witness that speaks
it can cosign or check Pokna's logs. Only Ed25519 keys (type byte 0x01). The key hash binds a signature to a
key *and* its name: the first four bytes of SHA-256(name || 0x0A || 0x01 || public key).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from pokna_verify.tlog.errors import MalformedNoteError, SignatureError

ED25519_TYPE = b"\x01"
SIGNATURE_DASH = "\u2014 "  # an em dash and a space open every signature line
MAX_SIGNATURES = 100  # as Go's note.Open: a note with more is refused, not checked one by one


def std_b64decode(text: str) -> bytes:
    """Standard, padded base64 (RFC 4648 section 4), one spelling per byte string."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise MalformedNoteError(f"{text[:20]!r} is not base64") from error
    if base64.b64encode(data).decode("ascii") != text:
        raise MalformedNoteError(f"{text[:20]!r} is not the canonical base64 spelling")
    return data


def _valid_name(name: str) -> bool:
    return bool(name) and "+" not in name and not any(ch.isspace() or ord(ch) < 0x20 for ch in name)


def key_hash(name: str, public_key: Ed25519PublicKey) -> bytes:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(name.encode() + b"\n" + ED25519_TYPE + raw).digest()[:4]


@dataclass(frozen=True)
class NoteVerifier:
    """A named Ed25519 public key; as text, "<name>+<hex key hash>+<base64(0x01 || key)>" (a vkey)."""

    name: str
    public_key: Ed25519PublicKey

    @property
    def key_hash(self) -> bytes:
        return key_hash(self.name, self.public_key)

    def to_text(self) -> str:
        raw = self.public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return f"{self.name}+{self.key_hash.hex()}+{base64.b64encode(ED25519_TYPE + raw).decode()}"

    @classmethod
    def from_text(cls, vkey: str) -> NoteVerifier:
        name, plus, rest = vkey.partition("+")
        hash_hex, plus2, key_b64 = rest.partition("+")
        if not (plus and plus2 and _valid_name(name)) or len(hash_hex) != 8:
            raise MalformedNoteError(f"{vkey!r} is not <name>+<key hash>+<key>")
        key = std_b64decode(key_b64)
        if len(key) != 33 or key[:1] != ED25519_TYPE:
            raise MalformedNoteError(f"{vkey!r} does not hold an Ed25519 key (type 0x01 and 32 bytes)")
        verifier = cls(name, Ed25519PublicKey.from_public_bytes(key[1:]))
        if verifier.key_hash.hex() != hash_hex:
            raise MalformedNoteError(f"{vkey!r}: the key hash is not this name's and key's")
        return verifier


@dataclass(frozen=True)
class NoteSignature:
    name: str
    key_hash: bytes
    signature: bytes


@dataclass(frozen=True)
class SignedNote:
    text: str
    verified: tuple[NoteSignature, ...]
    unverified: tuple[NoteSignature, ...]


def _check_text(text: str) -> None:
    if not text.endswith("\n") or "\n\n" in text:
        raise MalformedNoteError("a note's text is non-empty lines, each ending in a newline")
    if any(ord(ch) < 0x20 and ch != "\n" for ch in text):
        raise MalformedNoteError("a note's text holds a control character")


def sign_note(text: str, name: str, private_key: Ed25519PrivateKey) -> str:
    """The note as it travels: its text, a blank line and one signature line by `name`."""
    _check_text(text)
    if not _valid_name(name):
        raise MalformedNoteError(f"{name!r} is not a key name (no spaces, no '+')")
    signature = private_key.sign(text.encode())
    blob = base64.b64encode(key_hash(name, private_key.public_key()) + signature).decode()
    return f"{text}\n{SIGNATURE_DASH}{name} {blob}\n"


def _signature_line(line: str) -> NoteSignature:
    if not line.startswith(SIGNATURE_DASH):
        raise MalformedNoteError(f"{line[:40]!r} is not a signature line")
    name, space, blob = line[len(SIGNATURE_DASH) :].partition(" ")
    if not space or not _valid_name(name):
        raise MalformedNoteError(f"{line[:40]!r} does not name its key")
    raw = std_b64decode(blob)
    if len(raw) < 5:
        raise MalformedNoteError(f"{line[:40]!r} is too short to hold a key hash and a signature")
    return NoteSignature(name, raw[:4], raw[4:])


def open_note(message: str, verifiers: Sequence[NoteVerifier]) -> SignedNote:
    """Split and check a signed note: its text and which signatures verified with `verifiers`.

    A signature by a key not among `verifiers` is kept as unverified (a witness's cosignature); one by a
    listed key that does not verify is an error, and so is a note no listed key signed."""
    text, blank, signatures = message.rpartition("\n\n")
    if not blank or not signatures.endswith("\n"):
        raise MalformedNoteError("a signed note is text, a blank line and signature lines")
    text += "\n"
    _check_text(text)
    lines = signatures[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise MalformedNoteError(f"more than {MAX_SIGNATURES} signatures")
    verified: list[NoteSignature] = []
    unverified: list[NoteSignature] = []
    for line in lines:
        signature = _signature_line(line)
        known = [v for v in verifiers if v.name == signature.name and v.key_hash == signature.key_hash]
        if not known:
            unverified.append(signature)
            continue
        try:
            known[0].public_key.verify(signature.signature, text.encode())
        except InvalidSignature as error:
            raise SignatureError(
                f"invalid signature for key {signature.name}+{signature.key_hash.hex()}"
            ) from error
        if signature not in verified:
            verified.append(signature)
    if not verified:
        raise SignatureError("the note has no signature by a key it is checked against")
    return SignedNote(text, tuple(verified), tuple(unverified))
