"""The answer to a game request: built once from the decision, its bytes sent, stored for replay (by
game_write(), in the transaction that writes the decision) and carried by the announcements as `game`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import TypeAdapter

from pokna.dealer.records import SeatRecord
from pokna.dealer.schemas import ActionRollOut, GameActionOut, GameOut
from pokna_verify.game import StepResult
from pokna_verify.game.events import Rolled

CREATED = 201
ACCEPTED = 202
"""Beacon mode: a drawing action accepted, its round not yet there (pokna.dealer.beacon_rolls)."""


@dataclass(frozen=True, slots=True)
class ActionAnswer:
    """The game as the request's last step left it (pokna.dealer.view.game_out, built once by the step:
    pokna.dealer.action.rules_step.Stepped), with the rolls the request's own action made: a `GameActionOut`.

    Its bytes are `GameActionOut`'s, made without building one: a `GameActionOut` is a `GameOut` with
    `rolls` as its last field, so its JSON is the game's object with `"rolls"` added at its end. Copying
    the game's two dozen fields into a new model (`model_construct`) was about 2% of an action's CPU
    (issue 44); tests/dealer/test_dealer_answer.py holds the two equal."""

    shown: GameOut
    rolls: list[ActionRollOut]

    def json(self) -> str:
        """`GameActionOut(**shown, rolls=rolls).model_dump_json()`."""
        game = self.shown.model_dump_json()
        return f"{game[:-1]},{_ROLLS_KEY}{_ROLLS.dump_json(self.rolls).decode()}}}"

    def model(self) -> GameActionOut:
        return GameActionOut.model_construct(**dict(self.shown), rolls=self.rolls)


_ROLLS = TypeAdapter(list[ActionRollOut])
_ROLLS_KEY = '"rolls":'


def rolls_out(result: StepResult, seats: Sequence[SeatRecord]) -> list[ActionRollOut]:
    return [
        ActionRollOut(
            nonce=event.nonce,
            seat=event.seat,
            account_id=seats[event.seat].account_id,
            purpose=event.purpose.value,
            face=event.face,
            color=event.color.value,
            in_favor=event.in_favor,
        )
        for event in result.events
        if isinstance(event, Rolled)
    ]
