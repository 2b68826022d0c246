"""How the rules engine's refusals reach a client: a stable code, the right status, and the game as it is."""

from __future__ import annotations

from pokna.dealer.schemas import GameOut
from pokna.errors import Conflict, PoknaError
from pokna_verify.game import (
    AlreadyVoted,
    CannotPay,
    ChallengeUnaffordable,
    GameError,
    GameOver,
    InvalidConfig,
    InvalidRoll,
    InvalidVote,
    NotYourTurn,
    UnknownSeat,
    WrongPhase,
)

# Refusals caused by the game having moved on (or never being there) are conflicts with its current state;
# refusals of the request itself are unprocessable.
_UNPROCESSABLE = {UnknownSeat.code, InvalidVote.code, InvalidRoll.code, InvalidConfig.code}
_CONFLICTS = (WrongPhase, NotYourTurn, AlreadyVoted, GameOver, CannotPay, ChallengeUnaffordable)
REFUSAL_STATUS: dict[str, int] = {
    **{error.code: 409 for error in _CONFLICTS},
    **{code: 422 for code in _UNPROCESSABLE},
}
"""The HTTP status of each refusal of the rules, by its code (what the OpenAPI document lists)."""


class ActionRefused(PoknaError):
    status = 409
    title = "Action refused by the rules"

    def __init__(self, error: GameError, game: GameOut) -> None:
        super().__init__(error.message, **{**error.details, "game": game})
        self.code = error.code
        self.status = REFUSAL_STATUS.get(error.code, 409)


class VersionConflict(Conflict):
    """The client's `expected_version` is stale: someone else's action was applied first."""

    code = "conflict"
    title = "The game changed since you last read it"


class NotSeated(PoknaError):
    code = "not_seated"
    status = 422
    title = "That account has no seat in this game"


class ClientSeedLocked(PoknaError):
    code = "client_seed_locked"
    status = 409
    title = "Client seeds are fixed once the game starts"


class RoundInProgress(PoknaError):
    code = "round_in_progress"
    status = 409
    title = "The table's current round has not ended"
