"""Who must act now and how: the single source of truth for legality and for rendering the table."""

from __future__ import annotations

from dataclasses import dataclass

from pokna.game.actions import ActionName
from pokna.game.model import VIGO_SEAT, GameState, Phase

DEFAULT_CANCEL = "cancel"
DEFAULT_ROLL = "roll"
DEFAULT_CLAIM = "claim"
DEFAULT_SPLIT = "split"


@dataclass(frozen=True)
class Turn:
    """`default_action` is what a Timeout does now: cancel, roll, claim or split (None when the game is over).

    `allowed` lists seat actions and cancel; a Timeout is always allowed until the game is over.
    """

    seats: tuple[int, ...]
    allowed: tuple[str, ...]
    default_action: str | None


def turn(state: GameState) -> Turn:
    match state.phase:
        case Phase.OPEN:
            return Turn((VIGO_SEAT,), (ActionName.START.value, ActionName.CANCEL.value), DEFAULT_CANCEL)
        case Phase.SEEKING:
            return Turn(state.to_roll[:1], (ActionName.ROLL.value,), DEFAULT_ROLL)
        case Phase.VOTING:
            waiting = tuple(seat for seat in state.survivors if not state.voted(seat))
            return Turn(waiting, (ActionName.VOTE.value,), DEFAULT_SPLIT)
        case Phase.LONE_SURVIVOR:
            return Turn(
                _challenger(state), (ActionName.CLAIM.value, ActionName.CHALLENGE.value), DEFAULT_CLAIM
            )
        case Phase.CHALLENGE_FAVOR:
            return Turn((VIGO_SEAT,), (ActionName.ROLL.value,), DEFAULT_ROLL)
        case Phase.CHALLENGE_ROLL:
            return Turn(_challenger(state), (ActionName.ROLL.value,), DEFAULT_ROLL)
        case Phase.SETTLED | Phase.CANCELLED:
            return Turn((), (), None)


def _challenger(state: GameState) -> tuple[int, ...]:
    return () if state.challenger is None else (state.challenger,)
