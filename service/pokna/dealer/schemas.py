"""The dealer's answers, as documented and as sent: its services build these and nothing else, so what a
client gets is checked against what the OpenAPI document says. Fields may be added, never removed."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class SeatOut(BaseModel):
    seat: int
    account_id: str
    role: Literal["vigo", "player"]
    status: Literal["vigo", "in_favor", "eliminated"]
    voted: bool
    paid_in: int
    paid_out: int
    client_seed: str | None
    client_seed_source: Literal["player", "server"] | None


class TurnOut(BaseModel):
    seats: list[int] = Field(description="Seats that must act now (several while votes are awaited).")
    account_ids: list[str]
    allowed_actions: list[str] = Field(description="Action `type`s accepted now.")
    default_action: str | None = Field(
        description="What happens at the deadline: cancel, roll, claim or split."
    )
    deadline_at: datetime | None


class PayoutOut(BaseModel):
    seat: int
    account_id: str
    amount: int


class OutcomeOut(BaseModel):
    reason: str = Field(
        description="no_survivors, claimed, challenge_won, challenge_lost, split, vigo_bust or cancelled."
    )
    payouts: list[PayoutOut]


class FairnessOut(BaseModel):
    protocol: str
    server_seed_hash: str = Field(description="The commitment, published before any client seed or roll.")
    client_seed: str | None = Field(description="The game client seed, fixed at the start.")
    server_seed: str | None = Field(description="Revealed once the game has settled or been cancelled.")
    next_nonce: int
    commitment: dict[str, Any] = Field(description="The signed commitment receipt.")


class GameOut(BaseModel):
    id: str
    object: Literal["game"]
    status: Literal["open", "in_progress", "settled", "cancelled"]
    phase: str
    table_id: str | None
    round_number: int | None
    currency: str
    stake: int
    challenge_raise: int
    turn_timeout_seconds: int
    pot: int
    pot_account_id: str
    favor: Literal["red", "blue"] | None
    pass_number: int
    seats: list[SeatOut]
    turn: TurnOut | None
    outcome: OutcomeOut | None
    fairness: FairnessOut
    version: int
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None


class GameEventOut(BaseModel):
    seq: int
    kind: str
    data: dict[str, Any]
    occurred_at: datetime


class TableRoundOut(BaseModel):
    round_number: int | None
    game_id: str
    status: str
    vigo_account_id: str
    outcome: str | None


class TableTotalOut(BaseModel):
    account_id: str
    net: int = Field(description="Paid out minus paid in over all rounds, minor units.")


class TableOut(BaseModel):
    id: str
    object: Literal["table"]
    account_ids: list[str]
    stake: int
    challenge_raise: int
    currency: str
    turn_timeout_seconds: int
    rounds_played: int
    rounds: list[TableRoundOut]
    totals: list[TableTotalOut]
    created_at: datetime


class SignedProofOut(BaseModel):
    """The signed proof of a finished game, exactly as signed; docs/fairness.md describes every field.
    `pokna verify` and the browser verifier check it offline. Fields beyond these are kept as they are:
    the signature covers them all."""

    model_config = ConfigDict(extra="allow")

    protocol: str
    document: str
    game_id: str
    server_seed: str = Field(description="The revealed server seed; its SHA-256 is the commitment.")
    server_seed_hash: str
    client_seeds: list[dict[str, Any]]
    client_seed: str
    game: dict[str, Any] = Field(description="The terms as signed: stake, challenge raise and seats.")
    rolls: list[dict[str, Any]]
    actions: list[dict[str, Any]]
    outcome: dict[str, Any]
    transfers: list[dict[str, Any]]
    key_id: str
    signature: str


class ProofPendingOut(BaseModel):
    """A game not over yet: its seed is still secret, so there is only the signed commitment."""

    game_id: str
    status: Literal["open", "in_progress"]
    revealed: Literal[False]
    commitment: dict[str, Any] = Field(description="The signed commitment receipt.")


GameProofOut = SignedProofOut | ProofPendingOut
