"""What a webhook says: one model per event type, the body every attempt of its deliveries sends.

The body follows Standard Webhooks: `{"type", "timestamp", "data"}`; the message id travels in the
`webhook-id` header (the same on every retry). These models are the documented payloads (the OpenAPI
document's `webhooks` section) and what every event row holds (`pokna.outbox.Gathered` gathers them; the
change's one call, game_write() or ledger_move(), writes them).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, RootModel

from pokna_verify.game.model import Phase
from pokna_verify.game.vocabulary import DefaultAction, OutcomeReason, TurnAction


class EventType(StrEnum):
    GAME_CREATED = "game.created"
    GAME_STARTED = "game.started"
    GAME_TURN = "game.turn"
    GAME_TURN_TIMED_OUT = "game.turn_timed_out"
    GAME_SETTLED = "game.settled"
    GAME_CANCELLED = "game.cancelled"
    LEDGER_DEPOSIT_POSTED = "ledger.deposit.posted"
    LEDGER_WITHDRAWAL_POSTED = "ledger.withdrawal.posted"


EVENT_TYPES = tuple(event_type.value for event_type in EventType)

_GAME_ID = Field(
    description="The game's id (`game_...`).", examples=["game_5f0c2a9e4b7d4f1e9a3c6b8d2e1f0a7c"]
)
_VERSION = Field(description="The game's version after the change (what `expected_version` compares).")


class GameCreatedData(BaseModel):
    game_id: str = _GAME_ID
    version: int = Field(description="The game's version at creation (what `expected_version` compares).")
    table_id: str | None = Field(description="The table the game was dealt at, if any.")
    currency: str = Field(description="What the stake and every payout are counted in.")
    stake: int = Field(description="Each seat's ante, in minor units.")
    challenge_raise: int = Field(description="What a challenge costs the challenger, in minor units.")
    turn_timeout_seconds: int = Field(description="How long each turn waits before its default action.")
    account_ids: list[str] = Field(description="The seats' wallets, by seat; seat 0 is the Vigo.")
    start_deadline_at: datetime = Field(description="When the game is cancelled unless it has started.")


class GameStartedData(BaseModel):
    game_id: str = _GAME_ID
    version: int = _VERSION
    pot: int = Field(description="The antes in the pot, in minor units.")
    started_at: datetime


class GameTurnData(BaseModel):
    """Who must act now, what they may do and until when; at the deadline the default action applies."""

    game_id: str = _GAME_ID
    version: int = _VERSION
    phase: Phase = Field(description="The game's phase, as in the game's answer.")
    seats: list[int] = Field(description="The seats that must act now (several while votes are awaited).")
    account_ids: list[str] = Field(description="Their wallets, in the same order.")
    allowed_actions: list[TurnAction] = Field(description="The action `type`s accepted now.")
    default_action: DefaultAction | None = Field(
        description="What happens at the deadline: cancel, roll, claim or split."
    )
    deadline_at: datetime | None = Field(description="When the default action applies.")


class GameTurnTimedOutData(BaseModel):
    """A turn's deadline passed: the default action was applied in the players' place."""

    game_id: str = _GAME_ID
    version: int = _VERSION
    seats: list[int] = Field(description="The seats that did not act in time.")
    account_ids: list[str] = Field(description="Their wallets, in the same order.")
    applied_action: DefaultAction = Field(
        description="The default action applied: cancel, roll, claim or split."
    )
    deadline_at: datetime = Field(description="The deadline that passed; the action is stamped at it.")


class PayoutData(BaseModel):
    seat: int
    account_id: str
    amount: int = Field(description="Paid out of the pot to this seat, in minor units.")


class GameEndedData(BaseModel):
    game_id: str = _GAME_ID
    version: int = _VERSION
    reason: OutcomeReason = Field(
        description="no_survivors, claimed, challenge_won, challenge_lost, split, vigo_bust or cancelled."
    )
    payouts: list[PayoutData]
    public_url: str | None = Field(
        description="The public fairness link (the signed proof), relative to the API's base URL: the game's "
        "`fairness.public_url`, null exactly when that is (in practice never)."
    )
    verify_url: str | None = Field(
        description="The browser verifier opened on that link; null exactly when `public_url` is."
    )
    ended_at: datetime


class LedgerMovementData(BaseModel):
    account_id: str = Field(description="The player wallet credited or debited.")
    amount: int = Field(description="The amount moved, in minor units (always positive).")
    currency: str
    balance: int = Field(description="The wallet's balance right after the movement.")
    journal_transaction_id: str = Field(description="The journal transaction that posted it.")
    ledger_chain: int = Field(description="Which of the tenant's hash chains it is on (the wallet's).")
    ledger_seq: int = Field(description="Its place on that chain.")
    reference: str | None = Field(description="The reference given with the request, if any.")
    posted_at: datetime


class _Envelope(BaseModel):
    """Documented as sent: every field of the body is always there, `type` included, so the schema marks
    them required (a `switch` over `type` is exhaustive) although `type` has a default here. Each event
    narrows `type` to its own; a field redeclared keeps its place, so every body reads type, timestamp,
    data."""

    model_config = ConfigDict(
        json_schema_mode_override="serialization", json_schema_serialization_defaults_required=True
    )

    type: str
    timestamp: datetime = Field(description="When the change happened (RFC 3339, UTC).")


class GameCreated(_Envelope):
    """A game was created: its seats and terms; it waits for the Vigo's `start` until the deadline."""

    type: Literal["game.created"] = "game.created"
    data: GameCreatedData


class GameStarted(_Envelope):
    """The Vigo started the game: the antes are in the pot and the favor is rolled."""

    type: Literal["game.started"] = "game.started"
    data: GameStartedData


class GameTurn(_Envelope):
    """A turn must be taken: sent after every change that leaves the game running."""

    type: Literal["game.turn"] = "game.turn"
    data: GameTurnData


class GameTurnTimedOut(_Envelope):
    """A turn timed out and its default action was applied (a `game.turn` or the ending follows)."""

    type: Literal["game.turn_timed_out"] = "game.turn_timed_out"
    data: GameTurnTimedOutData


class GameSettled(_Envelope):
    """The game settled: its outcome, the payouts and the public link to its signed proof."""

    type: Literal["game.settled"] = "game.settled"
    data: GameEndedData


class GameCancelled(_Envelope):
    """The game was cancelled (by `cancel`, or never started in time): antes, if any, went back."""

    type: Literal["game.cancelled"] = "game.cancelled"
    data: GameEndedData


class DepositPosted(_Envelope):
    """A deposit was posted to a player wallet."""

    type: Literal["ledger.deposit.posted"] = "ledger.deposit.posted"
    data: LedgerMovementData


class WithdrawalPosted(_Envelope):
    """A withdrawal was posted from a player wallet."""

    type: Literal["ledger.withdrawal.posted"] = "ledger.withdrawal.posted"
    data: LedgerMovementData


Event = (
    GameCreated
    | GameStarted
    | GameTurn
    | GameTurnTimedOut
    | GameSettled
    | GameCancelled
    | DepositPosted
    | WithdrawalPosted
)


class WebhookEvent(RootModel[Annotated[Event, Field(discriminator="type")]]):
    """Any event Pokna sends, told apart by `type`: what a receiver parses a delivery's body as."""


EVENT_MODELS: dict[str, type[BaseModel]] = {
    model.model_fields["type"].default: model for model in get_args(Event)
}
