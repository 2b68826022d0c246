"""Ed25519 over canonical JSON, PEM handling and the key ring across a rotation."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from fairness_samples import KEY_RING, NEW_KEY, OLD_KEY, STRANGER_KEY, sample_proof

from pokna_verify.crypto.canonical_json import canonicalize
from pokna_verify.crypto.encoding import b64url_decode
from pokna_verify.crypto.errors import InvalidKeyError
from pokna_verify.crypto.signing import (
    generate_signing_key,
    key_id_of,
    load_private_key_pem,
    load_public_key_pem,
    private_key_to_pem,
    public_key_to_b64url,
    public_key_to_pem,
    raw_public_key,
    sign_document,
    signature_problem,
    signed_bytes,
    verify_document,
)
from pokna_verify.fairness.errors import UnknownKeyError
from pokna_verify.fairness.keyring import KeyRing, KeyStatus
from pokna_verify.fairness.verification import CheckStatus, verify_proof


def test_sign_verify_round_trip() -> None:
    key = generate_signing_key()
    document = sign_document({"b": 1, "a": ["x", None, True]}, key)
    assert document["key_id"] == key_id_of(key.public_key())
    assert len(b64url_decode(document["signature"])) == 64
    assert verify_document(document, key.public_key())
    assert not verify_document(document, STRANGER_KEY.public_key())
    assert not verify_document({**document, "b": 2}, key.public_key())


def test_signature_covers_the_canonical_bytes_without_the_signature_field() -> None:
    document = sign_document({"z": 1, "a": 2}, NEW_KEY)
    payload = canonicalize({"a": 2, "key_id": document["key_id"], "z": 1})
    assert signed_bytes(document) == payload
    NEW_KEY.public_key().verify(b64url_decode(document["signature"]), payload)


def test_key_order_does_not_matter_but_every_field_does() -> None:
    document = sign_document({"a": 1, "b": 2}, NEW_KEY)
    reordered = {key: document[key] for key in reversed(list(document))}
    assert verify_document(reordered, NEW_KEY.public_key())
    assert not verify_document({**document, "extra": None}, NEW_KEY.public_key())
    without_key_id = {key: value for key, value in document.items() if key != "key_id"}
    assert not verify_document(without_key_id, NEW_KEY.public_key())


def test_resigning_replaces_an_existing_signature_and_key_id() -> None:
    document = sign_document(sign_document({"a": 1}, OLD_KEY), NEW_KEY)
    assert document["key_id"] == key_id_of(NEW_KEY.public_key())
    assert verify_document(document, NEW_KEY.public_key())


@pytest.mark.parametrize(
    ("signature", "problem"),
    [
        (None, "no signature string"),
        ("not base64!", "not unpadded base64url"),
        ("AAAA", "64 bytes, this one is 3"),
        ("A" * 85 + "B", "not the canonical base64url spelling"),
    ],
)
def test_signature_problems_are_named(signature: object, problem: str) -> None:
    document = sign_document({"a": 1}, NEW_KEY)
    document["signature"] = signature
    assert problem in (signature_problem(document, NEW_KEY.public_key()) or "")


def test_key_id_is_derived_from_the_public_key() -> None:
    import hashlib

    public = NEW_KEY.public_key()
    assert key_id_of(public) == "ed25519:" + hashlib.sha256(raw_public_key(public)).hexdigest()[:16]
    assert key_id_of(public) != key_id_of(OLD_KEY.public_key())


def test_pem_round_trips() -> None:
    key = generate_signing_key()
    assert raw_public_key(load_private_key_pem(private_key_to_pem(key)).public_key()) == raw_public_key(
        key.public_key()
    )
    encrypted = private_key_to_pem(key, password=b"hunter2")
    assert b"ENCRYPTED" in encrypted
    assert key_id_of(load_private_key_pem(encrypted, b"hunter2").public_key()) == key_id_of(key.public_key())
    with pytest.raises(InvalidKeyError):
        load_private_key_pem(encrypted, b"wrong")
    assert key_id_of(load_public_key_pem(public_key_to_pem(key.public_key()))) == key_id_of(key.public_key())
    assert key_id_of(load_public_key_pem(private_key_to_pem(key))) == key_id_of(key.public_key())


def test_pem_of_another_algorithm_or_garbage_is_refused() -> None:
    other = X25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(InvalidKeyError, match="Ed25519"):
        load_private_key_pem(other)
    with pytest.raises(InvalidKeyError):
        load_public_key_pem(b"-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n")


def test_key_ring_json_round_trip() -> None:
    published = KEY_RING.to_json()
    assert published == {
        "keys": [
            {
                "key_id": key_id_of(NEW_KEY.public_key()),
                "algorithm": "Ed25519",
                "public_key": public_key_to_b64url(NEW_KEY.public_key()),
                "status": "current",
            },
            {
                "key_id": key_id_of(OLD_KEY.public_key()),
                "algorithm": "Ed25519",
                "public_key": public_key_to_b64url(OLD_KEY.public_key()),
                "status": "retired",
            },
        ]
    }
    assert KeyRing.from_json(published).to_json() == published


def test_rotation_keeps_retired_keys_and_old_proofs_verify() -> None:
    old_proof = sample_proof(private_key=OLD_KEY)
    ring = KeyRing.of(NEW_KEY.public_key(), retired=[OLD_KEY.public_key()])
    assert ring.current is not None
    assert ring.current.key_id == key_id_of(NEW_KEY.public_key())
    assert [key.status for key in ring.keys] == [KeyStatus.CURRENT, KeyStatus.RETIRED]
    served = KeyRing.from_json(ring.to_json())
    report = verify_proof(old_proof, served)
    assert report.valid
    assert "retired" in report.check("signature").message
    assert verify_proof(sample_proof(private_key=NEW_KEY), served).valid


def test_proof_signed_by_a_key_outside_the_ring_fails() -> None:
    report = verify_proof(sample_proof(private_key=STRANGER_KEY), KEY_RING)
    assert report.check("signature").status is CheckStatus.FAIL
    assert "is not in the key ring" in report.check("signature").message
    with pytest.raises(UnknownKeyError):
        KEY_RING.get(key_id_of(STRANGER_KEY.public_key()))


def test_a_single_public_key_checks_the_key_id_too() -> None:
    report = verify_proof(sample_proof(private_key=OLD_KEY), NEW_KEY.public_key())
    assert report.check("signature").status is CheckStatus.FAIL
    assert "the given public key is" in report.check("signature").message


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda entry: entry.update(key_id="ed25519:0000000000000000"), "is not the id of its key"),
        (lambda entry: entry.update(algorithm="RSA"), "algorithm"),
        (lambda entry: entry.update(status="revoked"), "status"),
        (lambda entry: entry.update(public_key="AAAA"), "32 bytes"),
        (lambda entry: entry.update(public_key=7), "not a string"),
    ],
)
def test_key_ring_json_refuses_bad_entries(mutate: object, problem: str) -> None:
    published = KEY_RING.to_json()
    assert callable(mutate)
    mutate(published["keys"][0])
    with pytest.raises(InvalidKeyError, match=problem):
        KeyRing.from_json(published)


def test_key_ring_refuses_two_current_keys_and_duplicates() -> None:
    with pytest.raises(InvalidKeyError, match="at most one current"):
        KeyRing.from_json(
            {"keys": [KEY_RING.to_json()["keys"][0], {**KEY_RING.to_json()["keys"][1], "status": "current"}]}
        )
    with pytest.raises(InvalidKeyError, match="twice"):
        KeyRing.from_json({"keys": [KEY_RING.to_json()["keys"][0]] * 2})
    with pytest.raises(InvalidKeyError):
        KeyRing.from_json({"nokeys": []})


def test_generated_keys_are_ed25519() -> None:
    assert isinstance(generate_signing_key(), Ed25519PrivateKey)
