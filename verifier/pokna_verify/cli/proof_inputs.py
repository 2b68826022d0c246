"""What `pokna-verify proof` (and `pokna verify`) is handed and what it trusts: SOURCE read as a bare proof, a
public link document or the pending `/proof` answer (from a file or the one URL given), and the receipt and
keys used, each with where it came from or why there is none."""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pokna_verify.cli.input_files import (
    UnusableInputError,
    fetch_json_object,
    is_url,
    read_json_object,
    read_json_source,
    read_public_key,
)
from pokna_verify.crypto.errors import CryptoError
from pokna_verify.fairness.beacon import KNOWN_CHAINS, BeaconChain
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.fairness.receipt import RECEIPT_DOCUMENT
from pokna_verify.fairness.verification import Keys

LINK_OBJECT = "fairness_link"
NO_SUCH_LINK = "no such proof link"
NOT_REVEALED = "not revealed yet: the server seed is published when the game ends"
NO_RECEIPT = "no commitment receipt given: pass --receipt FILE or verify the game's public link"
NO_KEYS = (
    "no key ring or public key given: pass --keys FILE|URL or --public-key FILE, "
    "or verify the game's public link"
)


@dataclass(frozen=True, slots=True)
class Subject:
    """What SOURCE turned out to be: a bare proof, a public link document, or the pending `/proof` answer."""

    kind: Literal["proof", "link", "pending"]
    game_id: str
    status: str | None
    proof: Mapping[str, Any] | None
    served_receipt: Mapping[str, Any] | None
    client_seeds: list[Any] | None
    keys_url: str | None
    public_log: Mapping[str, Any] | None = None  # a link's place in the public log (not signed: checked)

    @property
    def revealed(self) -> bool:
        return self.proof is not None

    def describe(self) -> str:
        if self.kind == "link":
            return f"the public proof link of game {self.game_id} ({self.status})"
        if self.kind == "pending":
            return f"the proof answer of game {self.game_id} ({self.status})"
        return "a proof"


@dataclass(frozen=True, slots=True)
class Evidence:
    """The receipt and keys used, where each came from (printed: which one was trusted is the user's to see),
    or why there is none (printed as the reason its check did not run)."""

    receipt: Mapping[str, Any] | None
    receipt_from: str | None
    receipt_given: bool
    receipt_missing: str
    keys: Keys | None
    keys_from: str | None
    keys_missing: str
    keys_kind: str | None = None  # "public_key", "key_ring" or "fetched"
    keys_url: str | None = None
    beacon_chains: tuple[BeaconChain, ...] = KNOWN_CHAINS  # the drand chains a beacon-mode proof may name


def read_subject(source: str) -> Subject:
    document = read_json_source(source, "proof", not_found=NO_SUCH_LINK)
    try:
        return _subject_of(document)
    except UnusableInputError as error:
        raise UnusableInputError(f"{source}: {error}") from error


def _subject_of(document: Mapping[str, Any]) -> Subject:
    if document.get("object") == LINK_OBJECT:
        return _link_subject(document)
    if document.get("revealed") is False and "commitment" in document:
        return _pending_subject(document)
    if document.get("document") == RECEIPT_DOCUMENT:
        raise UnusableInputError(
            "a commitment receipt, not a proof: pass it as --receipt, with the proof or the game's link"
        )
    if not {"protocol", "document", "server_seed"} & document.keys():
        raise UnusableInputError(
            'neither a proof ("document": "proof"), a public proof link ("object": "fairness_link"), '
            'nor a pending proof answer ("revealed": false)'
        )
    return Subject("proof", str(document.get("game_id")), None, document, None, None, None)


def _link_subject(document: Mapping[str, Any]) -> Subject:
    """The link's wrapper is not signed: only the proof and the receipt inside it are evidence."""
    revealed, proof = document.get("revealed"), document.get("proof")
    if not isinstance(revealed, bool):
        raise UnusableInputError("the link's `revealed` is neither true nor false")
    if revealed and not isinstance(proof, Mapping):
        raise UnusableInputError("the link says the game is revealed but carries no proof")
    if not revealed and proof is not None:
        raise UnusableInputError("the link says the game is not revealed yet but carries a proof")
    client_seeds = document.get("client_seeds")
    keys_url = document.get("keys_url")
    public_log = document.get("public_log")
    return Subject(
        "link",
        str(document.get("game_id")),
        str(document.get("status")),
        proof,
        _receipt_or_none(document.get("commitment"), "the link's commitment"),
        client_seeds if isinstance(client_seeds, list) else None,
        keys_url if isinstance(keys_url, str) else None,
        public_log if isinstance(public_log, Mapping) else None,
    )


def _pending_subject(document: Mapping[str, Any]) -> Subject:
    """`GET /v1/games/{id}/proof` before the game ends: the commitment only."""
    commitment = _receipt_or_none(document.get("commitment"), "the answer's commitment")
    return Subject(
        "pending", str(document.get("game_id")), str(document.get("status")), None, commitment, None, None
    )


def _receipt_or_none(value: object, what: str) -> Mapping[str, Any] | None:
    if value is None or isinstance(value, Mapping):
        return value
    raise UnusableInputError(f"{what} is not a JSON object")


def gather_evidence(
    source: str, subject: Subject, public_key: Path | None, keys: str | None, receipt: Path | None
) -> Evidence:
    """A receipt the user gives wins over the one the link serves. Keys are the user's if given; else a link
    URL's `keys_url` is fetched, resolved against the URL (a saved link has no origin to resolve it against)."""
    if receipt is not None:
        chosen_receipt: Mapping[str, Any] | None = read_json_object(receipt, "receipt")
        served = "the link serves" if subject.kind == "link" else "the answer holds"
        overriding = (
            f" (given, so the one {served} is not used)" if subject.served_receipt is not None else ""
        )
        receipt_from: str | None = f"yours, {receipt}{overriding}"
    else:
        chosen_receipt = subject.served_receipt
        where = "served with the link" if subject.kind == "link" else "in the proof answer"
        receipt_from = (
            f"the one {where} (pass --receipt FILE to use the one you kept)"
            if chosen_receipt is not None
            else None
        )
    receipt_missing = (
        "the link serves no commitment receipt: pass --receipt FILE" if subject.kind == "link" else NO_RECEIPT
    )
    keys_missing = NO_KEYS
    if subject.kind == "link" and not is_url(source):
        keys_missing = (
            "a saved link has no origin to fetch its keys_url from: pass --keys FILE|URL or "
            "--public-key FILE, or verify the link's URL"
        )
    partial = Evidence(
        chosen_receipt, receipt_from, receipt is not None, receipt_missing, None, None, keys_missing
    )
    if public_key is not None:
        return dataclasses.replace(
            partial,
            keys=read_public_key(public_key),
            keys_kind="public_key",
            keys_from=f"the public key in {public_key} (--public-key)",
        )
    if keys is not None:
        return dataclasses.replace(
            partial,
            keys=read_key_ring(keys),
            keys_kind="key_ring",
            keys_from=f"the key ring {keys} (--keys)",
        )
    if is_url(source) and subject.keys_url is not None:
        try:
            keys_url = urllib.parse.urljoin(source, subject.keys_url)
        except ValueError as error:  # the link's own text, e.g. "http://[::1": not even an address
            return dataclasses.replace(
                partial,
                keys_missing=f"the link's keys_url {subject.keys_url[:80]!r} is no address ({error}); pass --keys "
                "or --public-key",
            )
        return _fetched_keys(partial, keys_url)
    return partial


def _fetched_keys(partial: Evidence, keys_url: str) -> Evidence:
    """Trusting the operator's own published ring is a choice: it is printed, never silent. A ring that cannot
    be had leaves the signature checks not run, with the reason, rather than the whole verification unusable."""
    try:
        ring = KeyRing.from_json(fetch_json_object(keys_url, "key ring"))
    except (UnusableInputError, CryptoError) as error:
        return dataclasses.replace(
            partial, keys_missing=f"the link's key ring is unusable ({error}); pass --keys or --public-key"
        )
    return dataclasses.replace(
        partial,
        keys=ring,
        keys_kind="fetched",
        keys_url=keys_url,
        keys_from=(
            f"the operator's published key ring, fetched from {keys_url} "
            "(pass --keys or --public-key to use keys you obtained yourself)"
        ),
    )


def read_key_ring(source: str) -> KeyRing:
    """A URL is fetched (only because the user gave it); anything else is a file."""
    return KeyRing.from_json(read_json_source(source, "key ring"))
