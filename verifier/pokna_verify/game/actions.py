"""What a seat (or the shell, for cancel and timeout) asks the game to do."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar, Literal, TypeAlias

from pokna_verify.game.json_value import JSONObject, JSONValue
from pokna_verify.game.model import VoteChoice

# The names as the wire states them, beside the enum so that a new action is named in this one file:
# `TurnAction`, what answers and webhooks list in `allowed_actions` (the dealer's `set_client_seed`, then the
# rules' actions a seat or the table sends), and `SeatActionName`, the proof's actions of one seat with no
# choice. tests/game/test_game_vocabulary.py holds the three to the enum.
TurnAction = Literal["set_client_seed", "start", "roll", "claim", "challenge", "vote", "cancel"]
SeatActionName = Literal["start", "roll", "claim", "challenge"]


class ActionName(StrEnum):
    START = "start"
    ROLL = "roll"
    CLAIM = "claim"
    CHALLENGE = "challenge"
    VOTE = "vote"
    CANCEL = "cancel"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class Start:
    """The Vigo opens play: antes are posted and the favor is rolled in one step."""

    seat: int
    name: ClassVar[ActionName] = ActionName.START


@dataclass(frozen=True)
class Roll:
    seat: int
    name: ClassVar[ActionName] = ActionName.ROLL


@dataclass(frozen=True)
class Claim:
    seat: int
    name: ClassVar[ActionName] = ActionName.CLAIM


@dataclass(frozen=True)
class Challenge:
    seat: int
    name: ClassVar[ActionName] = ActionName.CHALLENGE


@dataclass(frozen=True)
class Vote:
    seat: int
    choice: VoteChoice
    name: ClassVar[ActionName] = ActionName.VOTE


@dataclass(frozen=True)
class Cancel:
    """Abandon an open game. No seat: the shell decides who may cancel (the creator, an admin)."""

    name: ClassVar[ActionName] = ActionName.CANCEL


@dataclass(frozen=True)
class Timeout:
    """A deadline passed; the shell decides when, the engine applies the default for the current turn."""

    name: ClassVar[ActionName] = ActionName.TIMEOUT


SeatAction: TypeAlias = Start | Roll | Claim | Challenge | Vote
Action: TypeAlias = SeatAction | Cancel | Timeout

SEAT_ACTIONS: dict[str, type[Start | Roll | Claim | Challenge]] = {
    ActionName.START: Start,
    ActionName.ROLL: Roll,
    ActionName.CLAIM: Claim,
    ActionName.CHALLENGE: Challenge,
}


def action_to_dict(action: Action) -> JSONObject:
    """The recorded form of an action, for the game log and the offline verifier."""
    record: JSONObject = {"action": action.name.value}
    if isinstance(action, Start | Roll | Claim | Challenge | Vote):
        record["seat"] = action.seat
    if isinstance(action, Vote):
        record["choice"] = VoteChoice(action.choice).value
    return record


def action_from_dict(record: dict[str, JSONValue]) -> Action:
    """Inverse of `action_to_dict`; raises ValueError on a record that names no action."""
    name = record.get("action")
    if name == ActionName.CANCEL:
        return Cancel()
    if name == ActionName.TIMEOUT:
        return Timeout()
    seat = record.get("seat")
    if not isinstance(seat, int) or isinstance(seat, bool):
        raise ValueError(f"action record needs an integer seat: {record!r}")
    if name == ActionName.VOTE:
        return Vote(seat, VoteChoice(str(record.get("choice"))))
    if isinstance(name, str) and name in SEAT_ACTIONS:
        return SEAT_ACTIONS[name](seat)
    raise ValueError(f"unknown action record: {record!r}")
