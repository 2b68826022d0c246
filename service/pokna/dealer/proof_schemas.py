"""The signed documents' insides as the API documents them (docs/fairness.md): the commitment receipt and
the proof, field by field, so a generated client needs no hand-written types (issue 26).

A signature covers the document exactly as it was signed, so these models must give back what they were
given, byte for byte once canonicalized: every model keeps fields it does not know (`extra="allow"`), and
the fields a later version of the service added (the rake terms, seat labels) are written back only when
they have a value, as the service signs them: never filled in with a `null` on the way out."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from pokna_verify.game.actions import SeatActionName
from pokna_verify.game.vocabulary import CubeColor, OutcomeReason, RollPurposeName, SeedSourceName

ProtocolName = Literal["pokna-hmac-sha256-v1", "pokna-hmac-sha256-drand-v1"]
"""The protocols a receipt, a proof and a game can name: `pokna_verify.fairness.protocol.PROTOCOL` (the stake mode)
and `pokna_verify.fairness.beacon.BEACON_PROTOCOL` (the beacon mode); tests/test_openapi_document.py holds the
document's enum to them."""

_PROTOCOL = Field(
    description="`pokna-hmac-sha256-v1` in the stake mode, `pokna-hmac-sha256-drand-v1` in the beacon mode "
    "(docs/fairness.md, sections 1 and 1b)."
)


class _AsSigned(BaseModel):
    model_config = ConfigDict(extra="allow")


def _absent_when_none(value: object) -> bool:
    return value is None


def _signed_when_set(description: str) -> Any:
    """The service never signs a `null` optional term: it leaves the field out, and so does the answer."""
    return Field(default=None, exclude_if=_absent_when_none, description=description)


class ProofSeat(_AsSigned):
    seat: int = Field(description="0 is the Vigo; players 1..n clockwise.")
    account_id: str
    label: str | None = _signed_when_set(
        "The operator's display name for the seat (`seat_labels` at creation); absent if none."
    )


class ProofTerms(_AsSigned):
    """The bet as signed: the money terms and who sits where."""

    stake: int = Field(description="Each seat's ante, minor units.")
    challenge_raise: int = Field(description="What a challenge adds, minor units.")
    rake_bps: int | None = _signed_when_set(
        "Present only when the game has a rake: basis points of each pot paid out."
    )
    rake_cap: int | None = _signed_when_set(
        "Present only when the rake is capped: at most this many minor units a pot."
    )
    seats: list[ProofSeat]


class CommitmentReceiptOut(_AsSigned):
    """The signed commitment, made when the game was created: the server seed's hash and the terms."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "protocol": "pokna-hmac-sha256-v1",
                    "document": "commitment_receipt",
                    "game_id": "game_5f0c2a9e4b7d4f1e9a3c6b8d2e1f0a7c",
                    "server_seed_hash": "861e71aae3914702057bf23c67148ff7bf08956965cd1b6f3d48792fa5875587",
                    "created_at": "2026-12-01T14:00:00Z",
                    "game": {
                        "stake": 5,
                        "challenge_raise": 5,
                        "seats": [
                            {"seat": 0, "account_id": "acct_vigo"},
                            {"seat": 1, "account_id": "acct_p1"},
                        ],
                    },
                    "key_id": "ed25519:d6f490673a115410",
                    "signature": "BcUuXUj_Jf-ICm01aHXsR1QIS7x6n0RM-_kE019oYxYljwcSVxi37Peu9VJhfCgPH9CDQch3UoHeiBY7IXx6Bw",
                }
            ]
        },
    )

    protocol: ProtocolName = _PROTOCOL
    document: Literal["commitment_receipt"]
    game_id: str
    server_seed_hash: str = Field(description="SHA-256 of the server seed, lowercase hex.")
    created_at: str = Field(description="When the commitment was made (RFC 3339, UTC).")
    game: ProofTerms
    fairness_mode: Literal["beacon"] | None = _signed_when_set(
        "`beacon` in the beacon mode; absent otherwise."
    )
    beacon_chain: BeaconChainOut | None = _signed_when_set("Beacon mode only: the chain its rolls use.")
    key_id: str = Field(description="The signing key's id (`/v1/fairness/keys`).")
    signature: str = Field(description="Ed25519 over the canonical JSON of every other field, base64url.")


class ProofClientSeed(_AsSigned):
    seat: int
    account_id: str
    client_seed: str
    source: SeedSourceName = Field(
        description="`player` if the seat chose it, `server` if drawn at the start."
    )


class BeaconChainOut(_AsSigned):
    """The drand chain a beacon-mode game committed to (docs/fairness.md, section 1b)."""

    scheme: str = Field(description="`bls-unchained-g1-rfc9380`.")
    chain_hash: str
    public_key: str = Field(description="The chain's BLS public key (G2, compressed, hex): the trust anchor.")
    genesis_time: int = Field(description="Round 1's time, seconds since the Unix epoch.")
    period: int = Field(description="Seconds between rounds.")


class BeaconRoundOut(_AsSigned):
    """A drand round as the chain published it."""

    round: int
    randomness: str = Field(description="sha256(signature), hex.")
    signature: str = Field(description="BLS signature on G1 of sha256(round as 8 bytes big-endian), hex.")


class ProofRoll(_AsSigned):
    nonce: int = Field(description="The roll's number in the game: 0 is the Vigo's favor roll.")
    seat: int
    account_id: str
    purpose: RollPurposeName
    face: int = Field(ge=1, le=6)
    color: CubeColor
    accepted_at: str | None = _signed_when_set(
        "Beacon mode only: when the action that drew the roll was accepted (UTC, milliseconds)."
    )
    beacon: BeaconRoundOut | None = _signed_when_set(
        "Beacon mode only: the round the roll used, the first published after `accepted_at`."
    )


class RollAcceptanceOut(_AsSigned):
    """Beacon mode: the signed acceptance of a drawing action, naming its round before the round exists.
    Keep it: the proof must use that round (docs/fairness.md, section 1b)."""

    protocol: Literal["pokna-hmac-sha256-drand-v1"]
    document: Literal["roll_acceptance"]
    game_id: str
    action: dict[str, int | str] = Field(description="The accepted action as the rules record it.")
    accepted_at: str = Field(description="When it was accepted (UTC, milliseconds).")
    beacon_round: int = Field(description="The round its rolls use: the first published after `accepted_at`.")
    round_due_at: str = Field(description="When that round is published.")
    chain_hash: str
    key_id: str
    signature: str


Balances = dict[str, int]
_BALANCES = Field(
    description="Each seat's balance when the action was decided, as the rules saw it (capped)."
)


class ProofSeatAction(_AsSigned):
    action: SeatActionName
    seat: int
    balances: Balances = _BALANCES


class ProofVoteAction(_AsSigned):
    action: Literal["vote"]
    seat: int
    choice: Literal["split", "roll_again"]
    balances: Balances = _BALANCES


class ProofTableAction(_AsSigned):
    """An action of no seat: a cancel, or a deadline's default action (`timeout`)."""

    action: Literal["cancel", "timeout"]
    balances: Balances = _BALANCES


ProofAction = Annotated[ProofSeatAction | ProofVoteAction | ProofTableAction, Field(discriminator="action")]


class ProofPayout(_AsSigned):
    seat: int
    amount: int


class ProofOutcome(_AsSigned):
    reason: OutcomeReason
    payouts: list[ProofPayout]


class ProofTransfer(_AsSigned):
    kind: Literal[
        "ante", "vigo_contribution", "challenge_raise", "challenge_match", "payout", "split", "rake"
    ]
    payer: Annotated[
        int | Literal["pot"],
        # An enum of one rather than a `const`: openapi-python-client cannot parse a const beside an integer.
        WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string", "enum": ["pot"]}]}),
    ] = Field(description="A seat number, or the pot.")
    payee: int | Literal["pot", "revenue"] = Field(
        description="A seat number, the pot, or the house (a rake)."
    )
    amount: int


class SignedProofOut(_AsSigned):
    """The signed proof of a finished game, exactly as signed; docs/fairness.md describes every field.
    `pokna verify` and the browser verifier check it offline."""

    protocol: ProtocolName = _PROTOCOL
    document: Literal["proof"]
    game_id: str
    server_seed: str = Field(description="The revealed server seed; its SHA-256 is the commitment.")
    server_seed_hash: str
    client_seeds: list[ProofClientSeed] = Field(description="Every seat's client seed, in seat order.")
    client_seed: str = Field(description="The game client seed: SHA-256 of the seats' seeds, newline-joined.")
    game: ProofTerms = Field(
        description="The terms as signed: stake, challenge raise, the rake terms when there are any, and seats."
    )
    rolls: list[ProofRoll] = Field(description="Every roll, in nonce order.")
    actions: list[ProofAction] = Field(description="Every decision the rules applied, in order.")
    outcome: ProofOutcome
    transfers: list[ProofTransfer] = Field(description="Every money movement, in order.")
    fairness_mode: Literal["beacon"] | None = _signed_when_set(
        "`beacon` in the beacon mode; absent otherwise."
    )
    beacon_chain: BeaconChainOut | None = _signed_when_set("Beacon mode only: the chain its rolls use.")
    key_id: str
    signature: str
