"""GameState to and from plain JSON, so the shell can store the state beside its events and reload it."""

from __future__ import annotations

from typing import Any, Final

from pokna_verify.game.cube import Color
from pokna_verify.game.json_value import JSONObject, JSONValue, to_json_value
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
    return {"version": SNAPSHOT_VERSION, **_object(to_json_value(state))}


def state_from_dict(record: dict[str, JSONValue]) -> GameState:
    """Raises ValueError (or KeyError/TypeError) on a record this version did not write."""
    if record.get("version") != SNAPSHOT_VERSION:
        raise ValueError(f"unsupported game snapshot version {record.get('version')!r}")
    raw: dict[str, Any] = dict(record)
    config = GameConfig(**raw["config"])  # a snapshot from before rake terms has none: zero rake
    outcome = raw["outcome"]
    return GameState(
        config=config,
        phase=Phase(raw["phase"]),
        favor=None if raw["favor"] is None else Color(raw["favor"]),
        pot=int(raw["pot"]),
        statuses=tuple(SeatStatus(status) for status in raw["statuses"]),
        to_roll=tuple(int(seat) for seat in raw["to_roll"]),
        votes=tuple(Ballot(int(vote["seat"]), VoteChoice(vote["choice"])) for vote in raw["votes"]),
        pass_number=int(raw["pass_number"]),
        challenger=None if raw["challenger"] is None else int(raw["challenger"]),
        next_nonce=int(raw["next_nonce"]),
        paid_in=tuple(int(amount) for amount in raw["paid_in"]),
        paid_out=tuple(int(amount) for amount in raw["paid_out"]),
        rake=int(raw.get("rake", 0)),
        outcome=None
        if outcome is None
        else Outcome(
            SettleReason(outcome["reason"]),
            tuple(Payout(int(payout["seat"]), int(payout["amount"])) for payout in outcome["payouts"]),
        ),
    )


def _object(value: JSONValue) -> JSONObject:
    if not isinstance(value, dict):
        raise TypeError("a game state lowers to a JSON object")
    return value
