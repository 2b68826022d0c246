"""Request shapes of the games API. Fields may be added, never removed. The answers are the dealer's own
(pokna.dealer.schemas): its services build them, so they are declared next to the code that fills them in."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic_core import PydanticCustomError

from pokna.api.fields import INTEGER_MAX, WHOLE_NUMBER, AccountId, Amount, Currency, RakeTermsIn
from pokna_verify.game import actions as rules
from pokna_verify.game.model import VoteChoice

ClientSeed = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9._~-]{1,64}$"),
    Field(description="1-64 characters from `A-Z a-z 0-9 . _ ~ -`.", examples=["lucky-7"]),
]
# Control and invisible formatting characters (bidirectional overrides, zero-width marks) would let one
# label pass for another on the verifier page; the label is text, shown as text.
_HIDDEN = r"\u0000-\u001F\u007F-\u009F\u00AD\u200B-\u200F\u2028-\u202E\u2060-\u206F\uFEFF"
SEAT_LABEL_PATTERN = rf"^[^\s{_HIDDEN}](?:[^{_HIDDEN}]*[^\s{_HIDDEN}])?$"


def _seat_label(label: str) -> str:
    """The documented pattern, checked here so that a refusal says why in words, not as a regular expression."""
    if re.fullmatch(SEAT_LABEL_PATTERN, label) is None:
        raise PydanticCustomError(
            "seat_label",
            "a seat label has no control or invisible formatting characters and no space at either end",
        )
    return label


SeatLabel = Annotated[
    str,
    StringConstraints(min_length=1, max_length=40),
    AfterValidator(_seat_label),
    Field(
        description="A seat's display name: 1-40 characters, no control or invisible formatting characters, "
        "no space at either end.",
        examples=["Han"],
        json_schema_extra={"pattern": SEAT_LABEL_PATTERN},
    ),
]
TurnTimeout = Annotated[int, Field(ge=5, le=86_400, strict=True), WHOLE_NUMBER]
Version = Annotated[
    Annotated[int, Field(ge=1, le=INTEGER_MAX, strict=True), WHOLE_NUMBER] | None,
    Field(
        default=None,
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
                },
                {
                    "vigo_account_id": "acct_vigo",
                    "player_account_ids": ["acct_p1", "acct_p2", "acct_p3", "acct_p4"],
                    "stake": 100,
                    "rake": {"bps": 500, "cap": 100},
                },
                {
                    "vigo_account_id": "acct_vigo",
                    "player_account_ids": ["acct_p1", "acct_p2"],
                    "stake": 5,
                    "seat_labels": ["Han", "Leia", "Chewie"],
                },
                {
                    "vigo_account_id": "acct_vigo",
                    "player_account_ids": ["acct_p1", "acct_p2"],
                    "stake": 5,
                    "fairness_mode": "beacon",
                },
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
    turn_timeout_seconds: TurnTimeout = Field(
        default=60,
        description="Each waiting turn's deadline; then the default action applies.",
    )
    rake: RakeTermsIn | None = Field(
        default=None,
        description="The house's share of each pot paid out, fixed now and signed in the commitment. "
        "Absent or null: the tenant's default rake (`GET /v1/tenant/settings`); "
        '`{"bps": 0}` for none.',
    )
    seat_labels: list[SeatLabel] | None = Field(
        default=None,
        min_length=2,
        max_length=12,
        description="Optional display names, one per seat, the Vigo's first, all different: signed into the "
        "commitment and the proof (`game.seats[].label`), so the verifier page names the seats as your app "
        "does. Absent: the page says the Vigo and Player 1..n.",
    )
    fairness_mode: Literal["stake", "beacon"] | None = Field(
        default=None,
        description="`stake` (the default, also when absent or null): each roll from the server seed, the client seeds and its nonce, "
        "Stake-compatible. `beacon`: each roll also uses the randomness of a drand round published after the "
        "action that draws it was accepted, so nobody, the operator included, can know a roll in advance; a "
        "drawing action then waits for its round (at most one period, 3 s, plus a margin) and is answered "
        "202 with `fairness.pending_roll` if the beacon is late (docs/fairness.md, section 1b).",
    )


SeatOf = Callable[[str | None], int]
"""The seat an account holds in the game (NotSeated if none)."""


class _Act(BaseModel):
    """An action as a request: each maps itself to the rules' own action (pokna_verify.game), given the seats."""

    model_config = ConfigDict(extra="forbid")
    expected_version: Version = None


class SetClientSeedAction(_Act):
    # Not a rules step: the dealer records the seed before the start (pokna.dealer.action.decision).
    type: Literal["set_client_seed"]
    account_id: AccountId
    client_seed: ClientSeed


class StartAction(_Act):
    type: Literal["start"]
    account_id: AccountId = Field(description="The Vigo.")

    def engine_action(self, seat_of: SeatOf) -> rules.Action:
        return rules.Start(seat_of(self.account_id))


class RollAction(_Act):
    type: Literal["roll"]
    account_id: AccountId

    def engine_action(self, seat_of: SeatOf) -> rules.Action:
        return rules.Roll(seat_of(self.account_id))


class ClaimAction(_Act):
    type: Literal["claim"]
    account_id: AccountId

    def engine_action(self, seat_of: SeatOf) -> rules.Action:
        return rules.Claim(seat_of(self.account_id))


class ChallengeAction(_Act):
    type: Literal["challenge"]
    account_id: AccountId

    def engine_action(self, seat_of: SeatOf) -> rules.Action:
        return rules.Challenge(seat_of(self.account_id))


class VoteAction(_Act):
    type: Literal["vote"]
    account_id: AccountId
    choice: Literal["split", "roll_again"]

    def engine_action(self, seat_of: SeatOf) -> rules.Action:
        return rules.Vote(seat_of(self.account_id), VoteChoice(self.choice))


class CancelAction(_Act):
    type: Literal["cancel"]
    account_id: AccountId | None = Field(
        default=None,
        description="Optional: who asked; if given, a seat of this game (else 422 `not_seated`).",
    )

    def engine_action(self, seat_of: SeatOf) -> rules.Action:
        if self.account_id is not None:
            # Nobody at this table asked: the request was meant for another game, which it must not cancel.
            seat_of(self.account_id)
        return rules.Cancel()


PlayerRequest = (
    SetClientSeedAction | StartAction | RollAction | ClaimAction | ChallengeAction | VoteAction | CancelAction
)
"""One player's request to act, as parsed; the dealer decides it as it is (pokna.dealer.action.decision.Act)."""

GameAction = Annotated[PlayerRequest, Field(discriminator="type")]


class TableCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"account_ids": ["acct_a", "acct_b", "acct_c"], "stake": 10},
                {
                    "account_ids": ["acct_a", "acct_b", "acct_c"],
                    "stake": 100,
                    "rake": {"bps": 250, "cap": 50},
                },
            ]
        },
    )

    account_ids: list[AccountId] = Field(
        min_length=2, max_length=12, description="The first round's Vigo, then the others clockwise."
    )
    stake: Amount
    challenge_raise: Amount | None = None
    currency: Currency = "CREDIT"
    turn_timeout_seconds: TurnTimeout = 60
    rake: RakeTermsIn | None = Field(
        default=None,
        description="Every round's rake, fixed now. Absent or null: the tenant's default rake; "
        '`{"bps": 0}` for none.',
    )


# The OpenAPI document's example of each action, beside the requests: a new action adds its own here.
ACTION_EXAMPLES: dict[str, Any] = {
    "set_client_seed": {
        "summary": "Choose your own client seed (before the start)",
        "value": {
            "type": "set_client_seed",
            "account_id": "acct_p1",
            "client_seed": "never-tell-me-the-odds",
        },
    },
    "start": {
        "summary": "The Vigo starts: antes, then the favor roll",
        "value": {"type": "start", "account_id": "acct_vigo"},
    },
    "roll": {"summary": "Seek favor on your turn", "value": {"type": "roll", "account_id": "acct_p1"}},
    "vote": {
        "summary": "Vote with other survivors",
        "value": {"type": "vote", "account_id": "acct_p1", "choice": "roll_again", "expected_version": 9},
    },
    "claim": {
        "summary": "The lone survivor takes the pot",
        "value": {"type": "claim", "account_id": "acct_p1"},
    },
    "challenge": {
        "summary": "The lone survivor challenges fate",
        "value": {"type": "challenge", "account_id": "acct_p1"},
    },
    "cancel": {"summary": "Call the game off before the start", "value": {"type": "cancel"}},
}
