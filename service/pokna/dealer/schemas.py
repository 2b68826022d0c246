"""The dealer's answers, as documented and as sent: its services build these and nothing else, so what a
client gets is checked against what the OpenAPI document says. Fields may be added, never removed."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, RootModel, Tag

from pokna.dealer.event_schemas import GameEventOut as GameEventOut
from pokna.dealer.link_log import LinkPublicLogOut
from pokna.dealer.proof_schemas import CommitmentReceiptOut as CommitmentReceiptOut
from pokna.dealer.proof_schemas import ProtocolName, RollAcceptanceOut
from pokna.dealer.proof_schemas import SignedProofOut as SignedProofOut
from pokna_verify.game import Phase
from pokna_verify.game.vocabulary import (
    CubeColor,
    DefaultAction,
    GameStatus,
    OutcomeReason,
    RollPurposeName,
    SeedSourceName,
    TurnAction,
)


class SeatOut(BaseModel):
    seat: int
    account_id: str
    role: Literal["vigo", "player"]
    status: Literal["vigo", "to_roll", "in_favor", "eliminated"] = Field(
        description="`to_roll`: a player who has not rolled yet in this pass (or before the start); "
        "`in_favor`: rolled the favor's color in this pass; `eliminated`: out of this game."
    )
    voted: bool
    paid_in: int
    paid_out: int
    client_seed: str | None
    client_seed_source: SeedSourceName | None


class TurnOut(BaseModel):
    seats: list[int] = Field(description="Seats that must act now (several while votes are awaited).")
    account_ids: list[str]
    allowed_actions: list[TurnAction] = Field(
        description="Action `type`s the rules accept now from these seats (with their balances now)."
    )
    default_action: DefaultAction | None = Field(
        description="What happens at the deadline: cancel, roll, claim or split."
    )
    deadline_at: datetime | None = Field(description="When `default_action` applies (RFC 3339, UTC).")


class PayoutOut(BaseModel):
    seat: int
    account_id: str
    amount: int


class OutcomeOut(BaseModel):
    reason: OutcomeReason = Field(description="How the game ended.")
    payouts: list[PayoutOut]


class PendingRollOut(BaseModel):
    """A beacon-mode drawing action, accepted and waiting for its drand round (docs/fairness.md, 1b)."""

    accepted_at: str = Field(description="When the action was accepted (UTC, milliseconds).")
    beacon_round: int = Field(description="The drand round its rolls will use: the first published after.")
    round_due_at: str = Field(description="When that round is published.")
    acceptance: RollAcceptanceOut = Field(
        description="The signed acceptance: keep it; it names the round before the round exists, and the "
        "proof must use that round."
    )


class FairnessOut(BaseModel):
    protocol: ProtocolName = Field(
        description="The protocol the game's rolls follow, as its receipt names it."
    )
    mode: Literal["stake", "beacon"] = Field(
        description="`stake`: rolls from the server seed, the client seeds and the nonce. `beacon`: each roll "
        "also uses a drand round published after the action that drew it was accepted."
    )
    pending_roll: PendingRollOut | None = Field(
        description="Beacon mode: the accepted action whose round has not arrived yet; null otherwise. "
        "Nothing else is accepted in the game until it resolves."
    )
    server_seed_hash: str = Field(description="The commitment, published before any client seed or roll.")
    client_seed: str | None = Field(description="The game client seed, fixed at the start.")
    server_seed: str | None = Field(description="Revealed once the game has settled or been cancelled.")
    next_nonce: int
    commitment: CommitmentReceiptOut = Field(description="The signed commitment receipt.")
    public_url: str | None = Field(
        description="The game's public fairness link, relative to this API's base URL: hand it to the "
        "players. Anyone holding it can read, without an API key, the commitment, the seats' account ids and "
        "client seeds and, once the game has ended, the signed proof (docs/fairness.md). Null only for a game "
        "stored without a link, which the service never writes: every game gets its link when it is created, "
        "and games older than links got theirs when the database was upgraded (migration 0006); so in "
        "practice never null.",
        examples=["/v1/fairness/proofs/Yc2rJ0b6kq3o2Qh8W1mVnA5sT9xE4uLd"],
    )
    verify_url: str | None = Field(
        description="The browser verifier opened on the public link, relative to this API's base URL. Null "
        "exactly when `public_url` is.",
        examples=["/verify?proof=Yc2rJ0b6kq3o2Qh8W1mVnA5sT9xE4uLd"],
    )


class RakeOut(BaseModel):
    """The operator's share of each pot paid out (docs/rules.md, "Rake"), fixed when the game was created."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"bps": 500, "cap": 100}]})

    bps: int = Field(description="Basis points of the pot (500 is 5%), rounded down to whole minor units.")
    cap: int | None = Field(description="At most this many minor units per pot; null for no cap.")


class GameOut(BaseModel):
    id: str
    object: Literal["game"]
    status: GameStatus
    phase: Phase = Field(description="Where the game is in the rules (docs/rules.md).")
    table_id: str | None
    round_number: int | None
    currency: str
    stake: int
    challenge_raise: int
    rake: RakeOut
    rake_taken: int = Field(
        description="What the house took from this game's pot, minor units (0 until it pays out)."
    )
    turn_timeout_seconds: int
    pot: int
    pot_account_id: str
    favor: CubeColor | None
    pass_number: int
    seats: list[SeatOut]
    turn: TurnOut | None
    outcome: OutcomeOut | None
    fairness: FairnessOut
    version: int
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None


class ActionRollOut(BaseModel):
    """One roll the action made, so a client can show the cube without another request."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "nonce": 1,
                    "seat": 1,
                    "account_id": "acct_han",
                    "purpose": "seek",
                    "face": 6,
                    "color": "blue",
                    "in_favor": True,
                }
            ]
        }
    )

    nonce: int = Field(description="The roll's number in the game: 0 is the Vigo's favor roll.")
    seat: int
    account_id: str
    purpose: RollPurposeName
    face: int = Field(ge=1, le=6)
    color: CubeColor
    in_favor: bool | None = Field(
        description="Whether the roll matched the favor it sought; null for the Vigo's rolls, which set it."
    )


class GameActionOut(GameOut):
    """The game after an action, with the rolls that action made (in nonce order; empty if it rolled none)."""

    rolls: list[ActionRollOut]


class TableRoundOut(BaseModel):
    round_number: int | None
    game_id: str
    status: GameStatus
    vigo_account_id: str
    outcome: OutcomeReason | None = Field(description="How the round ended; null while it runs.")


class TableTotalOut(BaseModel):
    account_id: str
    net: int = Field(
        description="Paid out minus paid in over all rounds, minor units (the rake is in neither)."
    )


class TableOut(BaseModel):
    id: str
    object: Literal["table"]
    account_ids: list[str]
    stake: int
    challenge_raise: int
    rake: RakeOut
    currency: str
    turn_timeout_seconds: int
    rounds_played: int
    rounds: list[TableRoundOut]
    totals: list[TableTotalOut]
    created_at: datetime


class ProofPendingOut(BaseModel):
    """A game not over yet: its seed is still secret, so there is only the signed commitment."""

    game_id: str
    status: Literal["open", "in_progress"]
    revealed: Literal[False] = Field(
        description="Always false. Only this answer has `revealed`: once the game has ended the answer is the "
        "signed proof itself (`document` is `proof`), which has no `revealed` member."
    )
    commitment: CommitmentReceiptOut = Field(description="The signed commitment receipt.")


def _proof_answer_kind(answer: object) -> str:
    """Which answer this is, by the one member they do not share: a pending answer's `revealed`. The signed
    proof cannot carry a `revealed: true` beside it, because its signature covers every member but itself:
    a client that saved the answer could no longer verify it. So the union is told apart here, and
    documented as a `oneOf`, without an OpenAPI `discriminator` (which needs a member in every variant)."""
    if isinstance(answer, ProofPendingOut):
        return "pending"
    if isinstance(answer, dict) and answer.get("revealed") is False:
        return "pending"
    return "proof"


GameProofOut = Annotated[
    Annotated[SignedProofOut, Tag("proof")] | Annotated[ProofPendingOut, Tag("pending")],
    Discriminator(_proof_answer_kind),
]


class LinkClientSeedOut(BaseModel):
    seat: int
    account_id: str
    client_seed: str | None = Field(description="Null until the player sets one or the start fixes it.")
    source: Literal["player", "server"] | None = Field(
        description="`player` if the participant chose it, `server` if the server drew it at the start."
    )


_LINK_OBJECT = Field(description="Always `fairness_link`.")
_LINK_COMMITMENT = Field(description="The signed commitment receipt, made at the game's creation.")
_KEYS_URL = Field(description="Where the published signing keys are, relative to this link's origin.")


class FairnessLinkPendingOut(BaseModel):
    """The link of a game not over yet: the commitment and the seeds so far; the server seed is secret."""

    object: Literal["fairness_link"] = _LINK_OBJECT
    game_id: str
    status: Literal["open", "in_progress"]
    revealed: Literal[False] = Field(description="False until the game has ended.")
    commitment: CommitmentReceiptOut = _LINK_COMMITMENT
    client_seeds: list[LinkClientSeedOut]
    # Always sent, as null, yet not listed as required: openapi-fetch (0.17) types an answer through
    # Readable<>, whose `NonNullable<T[K]> extends $Write<any>` test drops a property typed only null, so a
    # required `proof: null` made the link's answer unassignable to this very schema (issue 37, item 6).
    # An optional one may be dropped. Writable<> has the same fault (openapi-typescript issue 2717).
    proof: None = Field(default=None, description="Null until the game has ended (always sent).")
    keys_url: str = _KEYS_URL


class FairnessLinkRevealedOut(BaseModel):
    """The link of a game that has ended: the signed proof, which reveals the server seed."""

    object: Literal["fairness_link"] = _LINK_OBJECT
    game_id: str
    status: Literal["settled", "cancelled"]
    revealed: Literal[True] = Field(
        description="True once the game has ended and `proof` carries the server seed."
    )
    commitment: CommitmentReceiptOut = _LINK_COMMITMENT
    client_seeds: list[LinkClientSeedOut]
    proof: SignedProofOut = Field(description="The signed proof.")
    keys_url: str = _KEYS_URL
    public_log: LinkPublicLogOut = Field(
        description="Where the game is in its tenant's public log: `pending` until the sequencer appends it, "
        "then its leaf and inclusion proof against a signed checkpoint (included). Beside the proof, not "
        "in it: the proof was signed before the game was logged; the checkpoint's own signature covers this."
    )


def _without_discriminator(schema: dict[str, Any]) -> None:
    """OpenAPI's `discriminator` names a string property; `revealed` is a boolean, and generators that
    map the discriminator type it as the string "true". Its `const` in each variant tells them apart."""
    schema.pop("discriminator", None)


class FairnessLinkOut(
    RootModel[Annotated[FairnessLinkPendingOut | FairnessLinkRevealedOut, Field(discriminator="revealed")]]
):
    """A game's public fairness link, told apart by `revealed`: the proof is there exactly when it is true."""

    model_config = ConfigDict(json_schema_extra=_without_discriminator)
