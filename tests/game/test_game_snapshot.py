"""A stored state reads back as the state it was, and a record this version did not write is refused with
a ValueError naming what is wrong (pokna_verify.game.snapshot)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pokna_verify.game import GameConfig, new_game, state_from_dict, state_to_dict
from pokna_verify.game.cube import Color
from pokna_verify.game.evolve import evolve
from pokna_verify.game.model import Ballot, Outcome, Payout, Phase, SeatStatus, SettleReason, VoteChoice


def _stored() -> dict[str, Any]:
    state = new_game(GameConfig.create(stake=5, player_count=2, rake_bps=100, rake_cap=3))
    state = evolve(
        state,
        phase=Phase.SETTLED,
        favor=Color.BLUE,
        statuses=(SeatStatus.VIGO, SeatStatus.IN_FAVOR, SeatStatus.ELIMINATED),
        votes=(Ballot(1, VoteChoice.SPLIT),),
        outcome=Outcome(SettleReason.SPLIT, (Payout(1, 9),)),
        challenger=2,
    )
    stored: dict[str, Any] = json.loads(json.dumps(state_to_dict(state)))
    assert state_from_dict(stored) == state
    return stored


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("phase",), "sleeping"),
        (("favor",), "green"),
        (("statuses", 1), "lucky"),
        (("votes", 0, "choice"), "maybe"),
        (("outcome", "reason"), "luck"),
        (("version",), 2),
    ],
)
def test_a_value_this_version_did_not_write_is_a_value_error(where: tuple[Any, ...], value: object) -> None:
    stored = _stored()
    node = stored
    for part in where[:-1]:
        node = node[part]
    node[where[-1]] = value
    with pytest.raises(ValueError, match=repr(value)):
        state_from_dict(stored)
