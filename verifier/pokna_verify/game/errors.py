"""Refusals. Each carries a stable `code` so the API can map it to problem+json without parsing messages."""

from __future__ import annotations

from typing import ClassVar

from pokna_verify.game.json_value import JSONObject, to_json_value


class GameError(Exception):
    """Base of every refusal: the state handed to `step` is untouched when one is raised."""

    code: ClassVar[str] = "game_error"

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details: JSONObject = {name: to_json_value(value) for name, value in details.items()}

    def to_dict(self) -> JSONObject:
        return {"code": self.code, "message": self.message, **self.details}


class InvalidConfig(GameError):
    code = "invalid_config"


class UnknownSeat(GameError):
    code = "unknown_seat"

    def __init__(self, seat: object) -> None:
        super().__init__(f"there is no seat {seat!r} at this table", seat=str(seat))


class WrongPhase(GameError):
    code = "wrong_phase"

    def __init__(self, phase: str, action: str) -> None:
        super().__init__(f"{action} is not allowed while the game is {phase}", phase=phase, action=action)


class NotYourTurn(GameError):
    code = "not_your_turn"

    def __init__(self, seat: int, expected: tuple[int, ...]) -> None:
        super().__init__(
            f"seat {seat} may not act now; waiting on {list(expected)}", seat=seat, expected=expected
        )


class AlreadyVoted(GameError):
    code = "already_voted"

    def __init__(self, seat: int) -> None:
        super().__init__(f"seat {seat} has already voted on this pass", seat=seat)


class InvalidVote(GameError):
    code = "invalid_vote"

    def __init__(self, choice: object) -> None:
        super().__init__(f"{choice!r} is not a vote; choose split or roll_again", choice=str(choice))


class GameOver(GameError):
    code = "game_over"

    def __init__(self, phase: str) -> None:
        super().__init__(f"the game is {phase}; no further actions", phase=phase)


class CannotPay(GameError):
    """Raised at start so that no ante is posted unless every player can post theirs."""

    code = "cannot_pay"

    def __init__(self, seats: tuple[int, ...], amount: int) -> None:
        super().__init__(f"seats {list(seats)} cannot pay {amount}", seats=seats, amount=amount)
        self.seats = seats
        self.amount = amount


class ChallengeUnaffordable(GameError):
    """A lone survivor who cannot match the raise may only claim; the challenge is refused, not forced."""

    code = "challenge_unaffordable"

    def __init__(self, seat: int, amount: int) -> None:
        super().__init__(f"seat {seat} cannot match a challenge raise of {amount}", seat=seat, amount=amount)


class InvalidRoll(GameError):
    """The roll source broke its contract (face outside 1-6); nothing is applied."""

    code = "invalid_roll"

    def __init__(self, nonce: int, face: object) -> None:
        super().__init__(f"roll {nonce} gave {face!r}, not a face 1-6", nonce=nonce, face=str(face))


class ReplayMismatch(GameError):
    """A recorded step does not reproduce: the record, not the engine, is at fault."""

    code = "replay_mismatch"
