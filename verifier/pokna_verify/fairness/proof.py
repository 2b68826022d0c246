"""The public proof of one game: everything a stranger needs to recompute every roll and replay the game.

Published once the game settles, is voided or is cancelled, never earlier: it reveals the server seed. The
builder takes plain data (no database rows) and records faces *as the service used them*; it never
recomputes them, so a service bug shows up as a failed check instead of being papered over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pokna_verify.crypto.signing import sign_document
from pokna_verify.fairness.beacon import BEACON_PROTOCOL, BeaconChain, BeaconRound, FairnessMode
from pokna_verify.fairness.json_reader import JsonReader
from pokna_verify.fairness.protocol import PROTOCOL, game_client_seed, require_server_seed, server_seed_hash
from pokna_verify.fairness.terms import GameTerms
from pokna_verify.game.cube import color_of
from pokna_verify.game.events import RollPurpose as RollPurpose  # the purposes a proof records

PROOF_DOCUMENT = "proof"
POT = "pot"


class SeedSource(StrEnum):
    PLAYER = "player"
    SERVER = "server"


@dataclass(frozen=True, slots=True)
class SeatClientSeed:
    seat: int
    account_id: str
    client_seed: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "account_id": self.account_id,
            "client_seed": self.client_seed,
            "source": self.source,
        }

    @classmethod
    def read(cls, reader: JsonReader) -> SeatClientSeed:
        return cls(
            seat=reader.integer("seat"),
            account_id=reader.string("account_id"),
            client_seed=reader.string("client_seed"),
            source=reader.string("source"),
        )


@dataclass(frozen=True, slots=True)
class RecordedRoll:
    """Purpose and colour stay plain strings here: a parsed proof may hold anything, the checks judge it.

    In beacon mode a roll also carries the acceptance time of the action that drew it (RFC 3339 UTC,
    milliseconds) and the drand round its face depends on; in the default mode neither is written."""

    nonce: int
    seat: int
    account_id: str
    purpose: str
    face: int
    color: str
    accepted_at: str | None = None
    beacon: BeaconRound | None = None

    @classmethod
    def of(
        cls,
        nonce: int,
        seat: int,
        account_id: str,
        purpose: RollPurpose,
        face: int,
        *,
        accepted_at: str | None = None,
        beacon: BeaconRound | None = None,
    ) -> RecordedRoll:
        return cls(nonce, seat, account_id, str(purpose), face, str(color_of(face)), accepted_at, beacon)

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "nonce": self.nonce,
            "seat": self.seat,
            "account_id": self.account_id,
            "purpose": self.purpose,
            "face": self.face,
            "color": self.color,
        }
        if self.accepted_at is not None:
            document["accepted_at"] = self.accepted_at
        if self.beacon is not None:
            document["beacon"] = self.beacon.to_json()
        return document

    @classmethod
    def read(cls, reader: JsonReader) -> RecordedRoll:
        return cls(
            nonce=reader.integer("nonce"),
            seat=reader.integer("seat"),
            account_id=reader.string("account_id"),
            purpose=reader.string("purpose"),
            face=reader.integer("face"),
            color=reader.string("color"),
            accepted_at=reader.string("accepted_at") if "accepted_at" in reader.value else None,
            beacon=BeaconRound.read(reader.object("beacon")) if "beacon" in reader.value else None,
        )


@dataclass(frozen=True, slots=True)
class TransferRecord:
    """A money movement of the game: `payer`/`payee` are seat numbers or "pot", amounts minor units."""

    kind: str
    payer: int | str
    payee: int | str
    amount: int

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "payer": self.payer, "payee": self.payee, "amount": self.amount}

    @classmethod
    def read(cls, reader: JsonReader) -> TransferRecord:
        return cls(
            kind=reader.string("kind"),
            payer=reader.seat_or_pot("payer"),
            payee=reader.seat_or_pot("payee"),
            amount=reader.integer("amount"),
        )


@dataclass(frozen=True, slots=True)
class Proof:
    """A parsed proof. `document` keeps the exact mapping, because the signature covers it, not this view."""

    protocol: str
    document_type: str
    game_id: str
    server_seed: str
    server_seed_hash: str
    client_seeds: tuple[SeatClientSeed, ...]
    client_seed: str
    game: GameTerms
    rolls: tuple[RecordedRoll, ...]
    actions: tuple[Mapping[str, Any], ...]
    outcome: Mapping[str, Any]
    transfers: tuple[TransferRecord, ...]
    key_id: str
    signature: str
    document: Mapping[str, Any]
    fairness_mode: str = str(FairnessMode.STAKE)
    beacon_chain: BeaconChain | None = None

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Proof:
        """Raises MalformedProofError naming the first missing or mistyped field."""
        reader = JsonReader(document)
        return cls(
            protocol=reader.string("protocol"),
            document_type=reader.string("document"),
            game_id=reader.string("game_id"),
            server_seed=reader.string("server_seed"),
            server_seed_hash=reader.string("server_seed_hash"),
            client_seeds=tuple(SeatClientSeed.read(item) for item in reader.objects("client_seeds")),
            client_seed=reader.string("client_seed"),
            game=GameTerms.read(reader.object("game")),
            rolls=tuple(RecordedRoll.read(item) for item in reader.objects("rolls")),
            actions=tuple(item.value for item in reader.objects("actions")),
            outcome=reader.raw_object("outcome"),
            transfers=tuple(TransferRecord.read(item) for item in reader.objects("transfers")),
            key_id=reader.string("key_id"),
            signature=reader.string("signature"),
            document=document,
            # Absent in the default mode, so a proof from before beacons reads as it always did.
            fairness_mode=reader.string("fairness_mode")
            if "fairness_mode" in document
            else str(FairnessMode.STAKE),
            beacon_chain=BeaconChain.read(reader.object("beacon_chain"))
            if "beacon_chain" in document
            else None,
        )


def build_proof(
    *,
    game_id: str,
    server_seed: str,
    client_seeds: Sequence[SeatClientSeed],
    terms: GameTerms,
    rolls: Sequence[RecordedRoll],
    actions: Sequence[Mapping[str, Any]],
    outcome: Mapping[str, Any],
    transfers: Sequence[TransferRecord],
    private_key: Ed25519PrivateKey,
    beacon_chain: BeaconChain | None = None,
) -> dict[str, Any]:
    """The signed proof document. `client_seeds` in seat order; `rolls` in nonce order; `actions` as replayed.

    The commitment and the game client seed are derived here rather than passed in, so they cannot disagree
    with the seeds they summarize. With `beacon_chain` the game was played in beacon mode: the proof names
    its own protocol, the mode and the chain, and each roll carries its round (RecordedRoll). Without it
    the document is exactly what it was before beacons existed.
    """
    ordered_seeds = sorted(client_seeds, key=lambda entry: entry.seat)
    document: dict[str, Any] = {
        "protocol": PROTOCOL if beacon_chain is None else BEACON_PROTOCOL,
        "document": PROOF_DOCUMENT,
        "game_id": game_id,
        "server_seed": require_server_seed(server_seed),
        "server_seed_hash": server_seed_hash(server_seed),
        "client_seeds": [entry.to_json() for entry in ordered_seeds],
        "client_seed": game_client_seed([entry.client_seed for entry in ordered_seeds]),
        "game": terms.to_json(),
        "rolls": [entry.to_json() for entry in rolls],
        "actions": [dict(action) for action in actions],
        "outcome": dict(outcome),
        "transfers": [transfer.to_json() for transfer in transfers],
    }
    if beacon_chain is not None:
        document["fairness_mode"] = str(FairnessMode.BEACON)
        document["beacon_chain"] = beacon_chain.to_json()
    return sign_document(document, private_key)
