"""Request and response shapes of the games API. Fields may be added, never removed."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from pokna.api.schemas.common import AccountId, Amount, Currency

ClientSeed = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9._~-]{1,64}$"),
    Field(description="1-64 characters from `A-Z a-z 0-9 . _ ~ -`.", examples=["lucky-7"]),
]
Version = Annotated[
    int | None,
    Field(
        default=None,
        ge=1,
        description="Optional optimistic-concurrency guard: refuse (409 `conflict`) unless the game is at this "
        "version.",
    ),
]


class GameCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "vigo_account_id": "acct_vigo",
                    "player_account_ids": ["acct_p1", "acct_p2", "acct_p3", "acct_p4"],
                    "stake": 1,
                }
            ]
        },
    )

    vigo_account_id: AccountId = Field(description="Seat 0: the Vigo sets the stake and rolls the favor.")
    player_account_ids: list[AccountId] = Field(
        min_length=1, max_length=11, description="Players, clockwise from the Vigo (seats 1..n)."
    )
    stake: Amount
    challenge_raise: Amount | None = Field(
        default=None,
        description="What a challenge adds (and the challenger matches); fixed now. Default: the stake.",
    )
    currency: Currency = "CREDIT"
    turn_timeout_seconds: int = Field(
        default=60,
        ge=5,
        le=86_400,
        description="Each waiting turn's deadline; then the default action applies.",
    )


class _Act(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expected_version: Version = None


class SetClientSeed(_Act):
    type: Literal["set_client_seed"]
    account_id: AccountId
    client_seed: ClientSeed


class Start(_Act):
    type: Literal["start"]
    account_id: AccountId = Field(description="The Vigo.")


class RollAction(_Act):
    type: Literal["roll"]
    account_id: AccountId


class ClaimAction(_Act):
    type: Literal["claim"]
    account_id: AccountId


class ChallengeAction(_Act):
    type: Literal["challenge"]
    account_id: AccountId


class VoteAction(_Act):
    type: Literal["vote"]
    account_id: AccountId
    choice: Literal["split", "roll_again"]


class CancelAction(_Act):
    type: Literal["cancel"]
    account_id: AccountId | None = Field(default=None, description="Optional: who asked.")


GameAction = Annotated[
    SetClientSeed | Start | RollAction | ClaimAction | ChallengeAction | VoteAction | CancelAction,
    Field(discriminator="type"),
]


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


class TableCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"account_ids": ["acct_a", "acct_b", "acct_c"], "stake": 10}]},
    )

    account_ids: list[AccountId] = Field(
        min_length=2, max_length=12, description="The first round's Vigo, then the others clockwise."
    )
    stake: Amount
    challenge_raise: Amount | None = None
    currency: Currency = "CREDIT"
    turn_timeout_seconds: int = Field(default=60, ge=5, le=86_400)


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
