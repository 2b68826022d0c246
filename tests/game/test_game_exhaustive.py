"""Every roll sequence and every decision for the Vigo plus one and plus two players, up to a depth.

At every node the engine is also offered every action a client could send; whatever it refuses must
leave the state alone and draw no roll, and whatever it accepts must be what `turn` said was allowed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest
from game_harness import ToyLedger, check_state, no_rolls

from pokna_verify.game import (
    Action,
    Cancel,
    Challenge,
    Claim,
    GameConfig,
    GameError,
    GameState,
    Phase,
    Roll,
    Start,
    StepResult,
    Timeout,
    Vote,
    VoteChoice,
    new_game,
    step,
    turn,
)
from pokna_verify.game.events import TimedOut

MONEY_REFUSALS = {"cannot_pay", "challenge_unaffordable"}
OUTCOMES = {
    "no_survivors",
    "claimed",
    "challenge_won",
    "challenge_lost",
    "split",
    "vigo_bust",
    "cancelled",
    "truncated",
}


@dataclass
class Exploration:
    config: GameConfig
    faces: tuple[int, ...]
    max_passes: int
    start_balances: dict[int, int]
    endings: Counter[str] = field(default_factory=Counter)
    nodes: int = 0

    def every_action(self) -> list[Action]:
        seats = range(-1, self.config.player_count + 2)
        actions: list[Action] = [Cancel(), Timeout()]
        for seat in seats:
            actions += [Start(seat), Roll(seat), Claim(seat), Challenge(seat)]
            actions += [Vote(seat, choice) for choice in VoteChoice]
        return actions

    def explore(self, state: GameState, ledger: ToyLedger) -> None:
        self.nodes += 1
        check_state(state)
        assert ledger.pot == state.pot
        self.probe_everything(state, ledger)
        if state.is_over:
            self.check_ending(state, ledger)
            return
        if state.pass_number > self.max_passes:
            self.endings["truncated"] += 1
            return
        for action, face in self.choices(state):
            result = self.try_step(state, action, ledger, face)
            if result is None:
                continue
            child = ToyLedger(dict(ledger.balances), ledger.pot)
            child.post(result.transfers)
            self.explore(result.state, child)

    def choices(self, state: GameState) -> list[tuple[Action, int | None]]:
        now = turn(state)
        match state.phase:
            case Phase.OPEN:
                opening: list[tuple[Action, int | None]] = [(Start(0), face) for face in self.faces]
                return [*opening, (Cancel(), None), (Timeout(), None)]
            case Phase.SEEKING | Phase.CHALLENGE_FAVOR | Phase.CHALLENGE_ROLL:
                return [(Roll(now.seats[0]), face) for face in self.faces]
            case Phase.LONE_SURVIVOR:
                return [(Claim(now.seats[0]), None), (Challenge(now.seats[0]), None), (Timeout(), None)]
            case Phase.VOTING:
                votes: list[tuple[Action, int | None]] = [
                    (Vote(seat, choice), None) for seat in now.seats for choice in VoteChoice
                ]
                return [*votes, (Timeout(), None)]
        raise AssertionError(state.phase)

    def try_step(
        self, state: GameState, action: Action, ledger: ToyLedger, face: int | None
    ) -> StepResult | None:
        faces = [face] if face is not None else []
        try:
            result = step(state, action, balances=ledger.balances, roll_face=lambda nonce: faces.pop(0))
        except GameError as refusal:
            self.endings[refusal.code] += 1
            return None
        if isinstance(action, Roll):
            # A timeout on a roll turn is that seat's own roll.
            timed = step(state, Timeout(), balances=ledger.balances, roll_face=lambda nonce: face or 0)
            assert isinstance(timed.events[0], TimedOut)
            assert timed.state == result.state
            assert timed.events[1:] == result.events
        return result

    def probe_everything(self, state: GameState, ledger: ToyLedger) -> None:
        now = turn(state)
        for action in self.every_action():
            try:
                step(state, action, balances=ledger.balances, roll_face=lambda nonce: 1)
            except GameError as refusal:
                code = refusal.code
            else:
                code = "accepted"
            seat = getattr(action, "seat", None)
            if state.is_over:
                assert code == "game_over"
            elif code == "accepted":
                assert isinstance(action, Timeout | Cancel) or (
                    action.name in now.allowed and seat in now.seats
                )
            elif code not in MONEY_REFUSALS and seat is not None:
                assert (
                    seat not in self.config.seats or action.name not in now.allowed or seat not in now.seats
                )
        # A refusal must not have drawn a roll: no_rolls fails the test if it is called.
        for action in self.every_action():
            if getattr(action, "seat", 0) not in self.config.seats:
                with pytest.raises(GameError):
                    step(state, action, balances=ledger.balances, roll_face=no_rolls)

    def check_refusals(self) -> None:
        """Along the legal tree, only money can refuse an action: never the phase, seat or turn."""
        assert set(self.endings) - MONEY_REFUSALS <= OUTCOMES

    def check_ending(self, state: GameState, ledger: ToyLedger) -> None:
        assert ledger.pot == 0
        assert sum(ledger.balances.values()) == sum(self.start_balances.values())
        if state.phase is Phase.CANCELLED:
            assert ledger.balances == self.start_balances
            self.endings["cancelled"] += 1
        else:
            assert state.outcome is not None
            self.endings[state.outcome.reason.value] += 1
        for seat, balance in ledger.balances.items():
            assert balance >= 0, seat


def run(config: GameConfig, balances: dict[int, int], faces: tuple[int, ...], max_passes: int) -> Exploration:
    exploration = Exploration(config, faces, max_passes, dict(balances))
    exploration.explore(new_game(config), ToyLedger(dict(balances)))
    exploration.check_refusals()
    return exploration


ALL_FACES = (1, 2, 3, 4, 5, 6)


@pytest.mark.parametrize(
    ("balances", "expected_endings"),
    [
        ({0: 100, 1: 100}, {"no_survivors", "claimed", "challenge_won", "challenge_lost", "cancelled"}),
        ({0: 2, 1: 100}, {"no_survivors", "claimed", "vigo_bust", "cancelled"}),
        ({0: 100, 1: 3}, {"no_survivors", "claimed", "challenge_unaffordable", "cancelled"}),
        ({0: 100, 1: 2}, {"cannot_pay", "cancelled"}),
    ],
)
def test_vigo_and_one_player_every_face_every_decision(
    balances: dict[int, int], expected_endings: set[str]
) -> None:
    config = GameConfig(stake=3, challenge_raise=3, player_count=1)
    exploration = run(config, balances, ALL_FACES, max_passes=1)
    assert set(exploration.endings) == expected_endings
    assert "truncated" not in exploration.endings


@pytest.mark.parametrize(
    ("balances", "expected_endings"),
    [
        (
            {0: 100, 1: 100, 2: 100},
            {"no_survivors", "claimed", "challenge_won", "challenge_lost", "split", "cancelled", "truncated"},
        ),
        # The Vigo can pay for two survivors (4) once, not twice, and cannot raise (3) after that.
        (
            {0: 5, 1: 100, 2: 100},
            {"no_survivors", "claimed", "challenge_won", "challenge_lost", "split", "vigo_bust", "cancelled"},
        ),
        # Too poor to raise or to pay for two survivors: the only way to a vote or a challenge is a bust.
        ({0: 2, 1: 100, 2: 100}, {"no_survivors", "claimed", "vigo_bust", "cancelled"}),
        ({0: 100, 1: 100, 2: 1}, {"cannot_pay", "cancelled"}),
    ],
)
def test_vigo_and_two_players_every_colour_every_decision(
    balances: dict[int, int], expected_endings: set[str]
) -> None:
    config = GameConfig(stake=2, challenge_raise=3, player_count=2)
    # Faces 3 and 4 are the last red and the first blue: every colour sequence, at the boundary.
    exploration = run(config, balances, (3, 4), max_passes=3)
    assert set(exploration.endings) == expected_endings


def test_vigo_and_two_players_with_every_face_for_one_pass() -> None:
    config = GameConfig(stake=1, challenge_raise=1, player_count=2)
    exploration = run(config, {0: 50, 1: 50, 2: 50}, ALL_FACES, max_passes=1)
    # Both players miss the favor: for each of the 6 favor faces, 3 x 3 pairs of faces.
    assert exploration.endings["no_survivors"] == 6 * 3 * 3
