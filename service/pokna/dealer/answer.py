"""The answer to a game request: built once from the decision, its bytes sent, stored for replay (by
game_write(), in the transaction that writes the decision) and carried by the announcements as `game`."""

from __future__ import annotations

from collections.abc import Sequence

from pokna.dealer.records import SeatRecord
from pokna.dealer.schemas import ActionRollOut, GameActionOut, GameOut
from pokna_verify.game import StepResult
from pokna_verify.game.events import Rolled

CREATED = 201
ACCEPTED = 202
"""Beacon mode: a drawing action accepted, its round not yet there (pokna.dealer.beacon_rolls)."""


def action_answer(shown: GameOut, rolls: list[ActionRollOut]) -> GameActionOut:
    """The game as the request's last step left it (pokna.dealer.view.game_out, built once by the step:
    pokna.dealer.rules_step.Stepped), with the rolls the request's own action made."""
    return GameActionOut.model_construct(**dict(shown), rolls=rolls)


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


def status_for(accepted_round: int | None) -> int:
    """200, or 202 for an action accepted to wait for its beacon round."""
    return 200 if accepted_round is None else ACCEPTED
