"""The rules of Pokna as a pure, deterministic state machine: no I/O, no clock, no randomness of its own.

The shell loads a `GameState`, calls `step` with the seat balances and a `roll_face(nonce)` drawn from
the fairness roll stream, then persists the new state, the events and the transfers in one transaction.
"""

from pokna_verify.game.actions import (
    Action,
    ActionName,
    Cancel,
    Challenge,
    Claim,
    Roll,
    SeatAction,
    Start,
    Timeout,
    Vote,
    action_from_dict,
    action_to_dict,
)
from pokna_verify.game.cube import Color, color_of
from pokna_verify.game.engine import StepResult, step
from pokna_verify.game.errors import (
    AlreadyVoted,
    CannotPay,
    ChallengeUnaffordable,
    GameError,
    GameOver,
    InvalidConfig,
    InvalidRoll,
    InvalidVote,
    NotYourTurn,
    ReplayMismatch,
    UnknownSeat,
    WrongPhase,
)
from pokna_verify.game.events import Event, EventKind, RollPurpose
from pokna_verify.game.model import (
    VIGO_SEAT,
    Ballot,
    GameConfig,
    GameState,
    Outcome,
    Payout,
    Phase,
    SeatStatus,
    SettleReason,
    VoteChoice,
    new_game,
)
from pokna_verify.game.replay import RecordedStep, faces_rolled, replay, replay_steps
from pokna_verify.game.snapshot import state_from_dict, state_to_dict
from pokna_verify.game.split import split_pot
from pokna_verify.game.table import game_seat_of, round_seating, vigo_position
from pokna_verify.game.transfers import POT, REVENUE, Party, Pot, Revenue, Transfer, TransferKind
from pokna_verify.game.turn import Turn, allowed_actions, refusal_for_funds, turn

__all__ = [
    "POT",
    "REVENUE",
    "VIGO_SEAT",
    "Action",
    "ActionName",
    "AlreadyVoted",
    "Ballot",
    "Cancel",
    "CannotPay",
    "Challenge",
    "ChallengeUnaffordable",
    "Claim",
    "Color",
    "Event",
    "EventKind",
    "GameConfig",
    "GameError",
    "GameOver",
    "GameState",
    "InvalidConfig",
    "InvalidRoll",
    "InvalidVote",
    "NotYourTurn",
    "Outcome",
    "Party",
    "Payout",
    "Phase",
    "Pot",
    "RecordedStep",
    "ReplayMismatch",
    "Revenue",
    "Roll",
    "RollPurpose",
    "SeatAction",
    "SeatStatus",
    "SettleReason",
    "Start",
    "StepResult",
    "Timeout",
    "Transfer",
    "TransferKind",
    "Turn",
    "UnknownSeat",
    "Vote",
    "VoteChoice",
    "WrongPhase",
    "action_from_dict",
    "action_to_dict",
    "allowed_actions",
    "color_of",
    "faces_rolled",
    "game_seat_of",
    "new_game",
    "refusal_for_funds",
    "replay",
    "replay_steps",
    "round_seating",
    "split_pot",
    "state_from_dict",
    "state_to_dict",
    "step",
    "turn",
    "vigo_position",
]
