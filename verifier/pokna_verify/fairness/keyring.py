"""The operator's public signing keys, current and retired, in the form `GET /v1/fairness/keys` returns.

Keys are rotated, but proofs are forever: a retired key stays in the ring so old proofs still verify.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from pokna_verify.crypto.errors import InvalidKeyError
from pokna_verify.crypto.signing import ALGORITHM, key_id_of, public_key_from_b64url, public_key_to_b64url
from pokna_verify.fairness.errors import UnknownKeyError


class KeyStatus(StrEnum):
    CURRENT = "current"
    RETIRED = "retired"


@dataclass(frozen=True, slots=True)
class PublishedKey:
    key_id: str
    public_key: Ed25519PublicKey
    status: KeyStatus

    def to_json(self) -> dict[str, str]:
        return {
            "key_id": self.key_id,
            "algorithm": ALGORITHM,
            "public_key": public_key_to_b64url(self.public_key),
            "status": str(self.status),
        }


@dataclass(frozen=True, slots=True)
class KeyRing:
    """At most one current key (the one new documents are signed with); any number of retired ones."""

    keys: tuple[PublishedKey, ...]

    def __post_init__(self) -> None:
        ids = [key.key_id for key in self.keys]
        if len(set(ids)) != len(ids):
            raise InvalidKeyError("a key id appears twice in the key ring")
        if sum(key.status is KeyStatus.CURRENT for key in self.keys) > 1:
            raise InvalidKeyError("a key ring has at most one current key")

    @classmethod
    def of(cls, current: Ed25519PublicKey, retired: Iterable[Ed25519PublicKey] = ()) -> KeyRing:
        published = [PublishedKey(key_id_of(current), current, KeyStatus.CURRENT)]
        published += [PublishedKey(key_id_of(key), key, KeyStatus.RETIRED) for key in retired]
        return cls(tuple(published))

    @property
    def current(self) -> PublishedKey | None:
        return next((key for key in self.keys if key.status is KeyStatus.CURRENT), None)

    def find(self, key_id: str) -> PublishedKey | None:
        return next((key for key in self.keys if key.key_id == key_id), None)

    def get(self, key_id: str) -> Ed25519PublicKey:
        key = self.find(key_id)
        if key is None:
            raise UnknownKeyError(f"key {key_id} is not in the key ring")
        return key.public_key

    def to_json(self) -> dict[str, list[dict[str, str]]]:
        return {"keys": [key.to_json() for key in self.keys]}

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> KeyRing:
        """Refuses any entry whose key_id is not derived from its key: a mislabelled key must not verify."""
        entries = document.get("keys") if isinstance(document, Mapping) else None
        if not isinstance(entries, list):
            raise InvalidKeyError('a key ring is {"keys": [...]}')
        published = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, Mapping):
                raise InvalidKeyError(f"keys[{index}] is not an object")
            if entry.get("algorithm") != ALGORITHM:
                raise InvalidKeyError(
                    f"keys[{index}].algorithm is {entry.get('algorithm')!r}, not {ALGORITHM!r}"
                )
            text, key_id, status = entry.get("public_key"), entry.get("key_id"), entry.get("status")
            if not isinstance(text, str):
                raise InvalidKeyError(f"keys[{index}].public_key is not a string")
            public_key = public_key_from_b64url(text)
            if key_id != key_id_of(public_key):
                raise InvalidKeyError(
                    f"keys[{index}].key_id {key_id!r} is not the id of its key ({key_id_of(public_key)})"
                )
            if status not in tuple(KeyStatus):
                raise InvalidKeyError(f"keys[{index}].status is {status!r}, not current or retired")
            published.append(PublishedKey(key_id, public_key, KeyStatus(status)))
        return cls(tuple(published))
