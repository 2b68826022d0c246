"""GameState to and from plain JSON, so the shell can store the state beside its events and reload it."""

from __future__ import annotations

from typing import Any, Final, TypeVar

from pokna_verify.game.cube import Color
from pokna_verify.game.json_value import JSONObject, JSONValue
from pokna_verify.game.model import (
    Ballot,
    GameConfig,
    GameState,
    Outcome,
    Payout,
    Phase,
    SeatStatus,
    SettleReason,
    VoteChoice,
)

SNAPSHOT_VERSION: Final = 1


def state_to_dict(state: GameState) -> JSONObject:
    """The state as `to_json_value` lowers it, written out field by field: every game action stores
    its state, and the generic walk was its largest single piece of JSON work (issue 44). The keys are in
    the dataclasses' field order, as the walk writes them; tests/game/test_game_snapshot.py holds the two
    equal, key order included. An enum member's `_value_` is its value, read without `.value`'s
    descriptor."""
    config = state.config
    outcome = state.outcome
    return {
        "version": SNAPSHOT_VERSION,
        "config": {
            "stake": config.stake,
            "challenge_raise": config.challenge_raise,
            "player_count": config.player_count,
            "rake_bps": config.rake_bps,
            "rake_cap": config.rake_cap,
        },
        "phase": state.phase._value_,
        "favor": None if state.favor is None else state.favor._value_,
        "pot": state.pot,
        "statuses": [status._value_ for status in state.statuses],
        "to_roll": list(state.to_roll),
        "votes": [{"seat": ballot.seat, "choice": ballot.choice._value_} for ballot in state.votes],
        "pass_number": state.pass_number,
        "challenger": state.challenger,
        "next_nonce": state.next_nonce,
        "paid_in": list(state.paid_in),
        "paid_out": list(state.paid_out),
        "outcome": None
        if outcome is None
        else {
            "reason": outcome.reason._value_,
            "payouts": [{"seat": payout.seat, "amount": payout.amount} for payout in outcome.payouts],
        },
        "rake": state.rake,
    }


def state_from_dict(record: dict[str, JSONValue]) -> GameState:
    """Raises ValueError (or KeyError/TypeError) on a record this version did not write.

    Every game action reads its state back, so the enums are looked up in tables of their values rather
    than called (an enum's call is several Python calls), and the numbers converted by `map`."""
    if record.get("version") != SNAPSHOT_VERSION:
        raise ValueError(f"unsupported game snapshot version {record.get('version')!r}")
    raw: dict[str, Any] = dict(record)
    config = GameConfig(**raw["config"])  # a snapshot from before rake terms has none: zero rake
    outcome = raw["outcome"]
    statuses = tuple(map(_STATUSES.get, raw["statuses"]))
    if None in statuses:
        raise ValueError(f"unknown seat status in {raw['statuses']!r}")
    return GameState(
        config=config,
        phase=_member(_PHASES, raw["phase"]),
        favor=None if raw["favor"] is None else _member(_COLORS, raw["favor"]),
        pot=int(raw["pot"]),
        statuses=statuses,  # type: ignore[arg-type]
        to_roll=tuple(map(int, raw["to_roll"])),
        votes=tuple(Ballot(int(vote["seat"]), _member(_CHOICES, vote["choice"])) for vote in raw["votes"]),
        pass_number=int(raw["pass_number"]),
        challenger=None if raw["challenger"] is None else int(raw["challenger"]),
        next_nonce=int(raw["next_nonce"]),
        paid_in=tuple(map(int, raw["paid_in"])),
        paid_out=tuple(map(int, raw["paid_out"])),
        rake=int(raw.get("rake", 0)),
        outcome=None
        if outcome is None
        else Outcome(
            _member(_REASONS, outcome["reason"]),
            tuple(Payout(int(payout["seat"]), int(payout["amount"])) for payout in outcome["payouts"]),
        ),
    )


Member = TypeVar("Member")

_PHASES: Final = {phase.value: phase for phase in Phase}
_COLORS: Final = {color.value: color for color in Color}
_STATUSES: Final = {status.value: status for status in SeatStatus}
_CHOICES: Final = {choice.value: choice for choice in VoteChoice}
_REASONS: Final = {reason.value: reason for reason in SettleReason}


def _member(members: dict[str, Member], value: Any) -> Member:
    """The enum member whose value `value` is, as calling the enum gives it; ValueError if none is."""
    member = members.get(value)
    if member is None:
        raise ValueError(f"{value!r} is not one of {sorted(members)}")
    return member
