"""Who must act now and how: the single source of truth for legality and for rendering the table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pokna_verify.game.actions import ActionName
from pokna_verify.game.errors import CannotPay, ChallengeUnaffordable, GameError
from pokna_verify.game.model import VIGO_SEAT, GameState, Phase

DEFAULT_CANCEL = "cancel"
DEFAULT_ROLL = "roll"
DEFAULT_CLAIM = "claim"
DEFAULT_SPLIT = "split"

# The names as text, read once: an enum member's `.value` is a descriptor call, and `turn` and
# `refusal_for_funds` run several times in every game action.
_START, _CANCEL, _ROLL = ActionName.START.value, ActionName.CANCEL.value, ActionName.ROLL.value
_VOTE, _CLAIM, _CHALLENGE = ActionName.VOTE.value, ActionName.CLAIM.value, ActionName.CHALLENGE.value


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
            return Turn((VIGO_SEAT,), (_START, _CANCEL), DEFAULT_CANCEL)
        case Phase.SEEKING:
            return Turn(state.to_roll[:1], (_ROLL,), DEFAULT_ROLL)
        case Phase.VOTING:
            waiting = tuple(seat for seat in state.survivors if not state.voted(seat))
            return Turn(waiting, (_VOTE,), DEFAULT_SPLIT)
        case Phase.LONE_SURVIVOR:
            return Turn(_challenger(state), (_CLAIM, _CHALLENGE), DEFAULT_CLAIM)
        case Phase.CHALLENGE_FAVOR:
            return Turn((VIGO_SEAT,), (_ROLL,), DEFAULT_ROLL)
        case Phase.CHALLENGE_ROLL:
            return Turn(_challenger(state), (_ROLL,), DEFAULT_ROLL)
        case Phase.SETTLED | Phase.CANCELLED:
            return Turn((), (), None)


def _challenger(state: GameState) -> tuple[int, ...]:
    return () if state.challenger is None else (state.challenger,)


def refusal_for_funds(state: GameState, action: str, balances: Mapping[int, int]) -> GameError | None:
    """Why `step` would refuse `action` now for want of money (None if it would not): the one check both
    `step` and `allowed_actions` make, so that what is offered is what is accepted. `balances` is each
    seat's spendable balance; a missing seat counts as 0."""
    config = state.config
    if action == _START:
        short = tuple(seat for seat in config.players if balances.get(seat, 0) < config.stake)
        return CannotPay(short, config.stake) if short else None
    challenger = state.challenger
    if action == _CHALLENGE and challenger is not None:
        affordable = balances.get(challenger, 0) >= config.challenge_raise
        return None if affordable else ChallengeUnaffordable(challenger, config.challenge_raise)
    return None


def allowed_actions(state: GameState, balances: Mapping[int, int]) -> tuple[str, ...]:
    """The actions `step` accepts now from the seats whose turn it is, given their balances."""
    return tuple(name for name in turn(state).allowed if refusal_for_funds(state, name, balances) is None)
