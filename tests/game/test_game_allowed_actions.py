"""What a client is offered is what the rules accept: `allowed_actions` against `step` (hypothesis).

At every state of random games, with random balances, every action of every seat is tried: it must be
accepted exactly when it is offered to a seat whose turn it is (and refused, with nothing changed, when it
is not). A lone survivor who cannot match the raise is not offered `challenge`; a short table is not
offered `start`."""

from __future__ import annotations

from game_harness import DrawnRolls, Table
from hypothesis import HealthCheck, given, settings
from hypothesis import event as tally
from hypothesis import strategies as st

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
    Timeout,
    Vote,
    VoteChoice,
    allowed_actions,
    step,
    turn,
)


def every_action(config: GameConfig) -> list[Action]:
    actions: list[Action] = [Cancel()]
    for seat in config.seats:
        actions += [Start(seat), Roll(seat), Claim(seat), Challenge(seat)]
        actions += [Vote(seat, choice) for choice in VoteChoice]
    return actions


def offered(state: GameState, action: Action, balances: dict[int, int]) -> bool:
    if action.name not in allowed_actions(state, balances):
        return False
    return isinstance(action, Cancel) or getattr(action, "seat", None) in turn(state).seats


def accepted(state: GameState, action: Action, balances: dict[int, int]) -> bool:
    try:
        step(state, action, balances=balances, roll_face=lambda nonce: 1 + nonce % 6)
    except GameError:
        return False
    return True


def check_offers(state: GameState, balances: dict[int, int]) -> None:
    for action in every_action(state.config):
        assert offered(state, action, balances) == accepted(state, action, balances), (
            state.phase,
            action,
            balances,
            allowed_actions(state, balances),
        )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_offered_action_is_accepted_and_every_refused_one_is_not_offered(data: st.DataObject) -> None:
    player_count = data.draw(st.integers(min_value=1, max_value=6), label="players")
    stake = data.draw(st.integers(min_value=1, max_value=10), label="stake")
    challenge_raise = data.draw(st.integers(min_value=1, max_value=30), label="raise")
    config = GameConfig(stake, challenge_raise, player_count)
    funds = st.integers(0, 3 * stake + 2 * challenge_raise)
    table = Table.seated(config, {seat: data.draw(funds) for seat in config.seats})
    rolls = DrawnRolls(lambda: data.draw(st.integers(min_value=1, max_value=6)))
    for _ in range(60):
        check_offers(table.state, dict(table.ledger.balances))
        if table.state.is_over:
            break
        tally(table.state.phase.value)
        if table.state.phase is Phase.LONE_SURVIVOR and "challenge" not in allowed_actions(
            table.state, table.ledger.balances
        ):
            tally("lone survivor who cannot afford the challenge")
        choices = [
            action for action in every_action(config) if offered(table.state, action, table.ledger.balances)
        ]
        table.act(data.draw(st.sampled_from([*choices, Timeout()])), rolls)
    assert table.state.is_over or table.state.phase is not Phase.SETTLED


def test_a_lone_survivor_who_cannot_match_the_raise_is_offered_only_the_claim() -> None:
    config = GameConfig(stake=5, challenge_raise=10, player_count=1)
    table = Table.seated(config, {0: 100, 1: 5})
    faces = iter([6, 6])  # favor blue (6 is blue), the player rolls blue: a lone survivor with 0 left
    table.act(Start(0), lambda nonce: next(faces))
    table.act(Roll(1), lambda nonce: next(faces))
    assert table.state.phase is Phase.LONE_SURVIVOR
    assert table.ledger.balances[1] == 0
    assert allowed_actions(table.state, table.ledger.balances) == ("claim",)
    assert not accepted(table.state, Challenge(1), table.ledger.balances)


def test_a_short_table_is_not_offered_the_start() -> None:
    config = GameConfig(stake=5, challenge_raise=5, player_count=2)
    state = Table.seated(config, {0: 0, 1: 5, 2: 4}).state
    assert allowed_actions(state, {0: 0, 1: 5, 2: 4}) == ("cancel",)
    assert allowed_actions(state, {0: 0, 1: 5, 2: 5}) == ("start", "cancel")
