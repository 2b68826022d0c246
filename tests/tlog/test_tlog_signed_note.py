"""Signed notes and checkpoints against the Go reference's published vectors (golang.org/x/mod/sumdb/note,
note_test.go: Peter Neumann's and Enoch Root's keys, signatures and malformed notes), so a note we sign is one
any C2SP witness reads; and a checkpoint whose size, root or ledger heads changed no longer verifies."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pokna_verify.tlog.checkpoint import Checkpoint, ledger_head_lines, parse_checkpoint
from pokna_verify.tlog.errors import MalformedNoteError, SignatureError
from pokna_verify.tlog.note import NoteVerifier, open_note, sign_note

# The Go reference's test data: a private key ("PRIVATE+KEY+<name>+<hash>+base64(0x01 || seed)"), two vkeys.
PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
PETER_SIG = "\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
ENOCH_SIG = "\u2014 EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n"


def peter_private_key() -> Ed25519PrivateKey:
    blob = base64.b64decode(PETER_SKEY.split("+", 4)[4])
    assert blob[0] == 1
    return Ed25519PrivateKey.from_private_bytes(blob[1:])


def test_signing_reproduces_the_reference_signature_byte_for_byte() -> None:
    assert sign_note(TEXT, "PeterNeumann", peter_private_key()) == TEXT + "\n" + PETER_SIG


def test_the_reference_verifier_keys_parse_and_print_back() -> None:
    peter = NoteVerifier.from_text(PETER_VKEY)
    assert peter.key_hash.hex() == "c74f20a3"
    assert peter.to_text() == PETER_VKEY
    assert NoteVerifier("PeterNeumann", peter_private_key().public_key()).to_text() == PETER_VKEY
    assert NoteVerifier.from_text(ENOCH_VKEY).to_text() == ENOCH_VKEY


@pytest.mark.parametrize(
    "vkey",
    [
        "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",
        "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        PETER_VKEY.replace("c74f20a3", "c74f20a4"),
        PETER_VKEY.replace("Peter", "Pete"),
        PETER_VKEY[:-1],
    ],
)
def test_mangled_verifier_keys_are_refused(vkey: str) -> None:
    with pytest.raises(MalformedNoteError):
        NoteVerifier.from_text(vkey)


def test_opening_keeps_signatures_by_unknown_keys_as_unverified() -> None:
    peter, enoch = NoteVerifier.from_text(PETER_VKEY), NoteVerifier.from_text(ENOCH_VKEY)
    note = open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [peter])
    assert note.text == TEXT
    assert [s.name for s in note.verified] == ["PeterNeumann"]
    assert [s.name for s in note.unverified] == ["EnochRoot"]
    both = open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [peter, enoch])
    assert [s.name for s in both.verified] == ["PeterNeumann", "EnochRoot"]
    with pytest.raises(SignatureError):
        open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [])
    with pytest.raises(SignatureError, match="invalid signature for key PeterNeumann"):
        open_note(TEXT + "\n" + PETER_SIG[:60] + "ABCD" + PETER_SIG[60:], [peter])
    with pytest.raises(MalformedNoteError):
        open_note(TEXT + "\n" + PETER_SIG * 101, [peter])


@pytest.mark.parametrize(
    "message",
    [
        TEXT,
        TEXT + "\n",
        TEXT + "\n" + PETER_SIG[:-1],
        "\x01" + TEXT + "\n" + PETER_SIG,
        TEXT + "\n" + PETER_SIG.replace("PeterNeumann", "Bad Name"),
        TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
    ],
)
def test_the_reference_malformed_notes_are_refused(message: str) -> None:
    with pytest.raises(MalformedNoteError):
        open_note(message, [NoteVerifier.from_text(PETER_VKEY)])


def test_a_note_whose_text_changed_does_not_verify() -> None:
    with pytest.raises(SignatureError):
        open_note(TEXT.replace("answer", "question") + "\n" + PETER_SIG, [NoteVerifier.from_text(PETER_VKEY)])


HEADS = {0: (12, "ab" * 32), 3: (2, "cd" * 32), 5: (0, "00" * 32)}


def signed_checkpoint(key: Ed25519PrivateKey, size: int = 7) -> str:
    checkpoint = Checkpoint("pokna.example/log/t1", size, bytes(range(32)), ledger_head_lines(HEADS))
    return sign_note(checkpoint.to_text(), checkpoint.origin, key)


def test_a_checkpoint_round_trips_through_its_signed_note() -> None:
    key = Ed25519PrivateKey.generate()
    message = signed_checkpoint(key)
    assert message.split("\n\n")[0].splitlines() == [
        "pokna.example/log/t1",
        "7",
        base64.b64encode(bytes(range(32))).decode(),
        f"ledger 0 12 {'ab' * 32}",
        f"ledger 3 2 {'cd' * 32}",
    ]
    note = open_note(message, [NoteVerifier("pokna.example/log/t1", key.public_key())])
    checkpoint = parse_checkpoint(note.text)
    assert (checkpoint.size, checkpoint.root_hash) == (7, bytes(range(32)))
    assert checkpoint.ledger_heads == {0: (12, "ab" * 32), 3: (2, "cd" * 32)}


@pytest.mark.parametrize(
    ("old", "new"), [("\n7\n", "\n8\n"), ("ledger 0 12", "ledger 0 11"), ("AAECAwQF", "AAECAwQG")]
)
def test_a_checkpoint_with_a_changed_size_root_or_head_does_not_verify(old: str, new: str) -> None:
    key = Ed25519PrivateKey.generate()
    message = signed_checkpoint(key)
    assert old in message
    with pytest.raises(SignatureError):
        open_note(message.replace(old, new, 1), [NoteVerifier("pokna.example/log/t1", key.public_key())])


def test_a_checkpoint_signed_under_another_name_is_not_this_logs() -> None:
    key = Ed25519PrivateKey.generate()
    with pytest.raises(SignatureError):
        open_note(signed_checkpoint(key), [NoteVerifier("pokna.example/log/t2", key.public_key())])


ROOT_LINES = "origin\n7\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"


@pytest.mark.parametrize(
    "text",
    [
        "origin\n7\n",
        "origin\n07\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",
        "origin\n-1\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",
        "origin\n7\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==\n",
        "origin\n7\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\n",
        "\n7\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",
        "origin\n7\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        f"{ROOT_LINES}ledger 0 012 {'ab' * 32}\n",
        f"{ROOT_LINES}ledger 0 12 {'AB' * 32}\n",
        f"{ROOT_LINES}ledger 0 12 {'ab' * 31}\n",
        f"{ROOT_LINES}ledger 0 0 {'ab' * 32}\n",
        f"{ROOT_LINES}ledger -1 12 {'ab' * 32}\n",
        f"{ROOT_LINES}ledger 0 {'1' * 20} {'ab' * 32}\n",
        f"{ROOT_LINES}ledger 0 12 {'ab' * 32}\nledger 0 13 {'cd' * 32}\n",
        f"{ROOT_LINES}ledger 3 12 {'ab' * 32}\nledger 0 13 {'cd' * 32}\n",
    ],
)
def test_malformed_checkpoints_are_refused(text: str) -> None:
    with pytest.raises(MalformedNoteError):
        parse_checkpoint(text)


def test_extension_lines_not_pokna_s_are_kept_and_skipped() -> None:
    checkpoint = parse_checkpoint(f"{ROOT_LINES}ledger 0 12 {'ab' * 32}\nledgers 0 x\nother 1\n")
    assert checkpoint.ledger_heads == {0: (12, "ab" * 32)}
    assert checkpoint.extensions[1:] == ("ledgers 0 x", "other 1")
