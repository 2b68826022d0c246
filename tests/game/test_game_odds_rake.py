"""The operator's revenue in the odds: checked against the rules engine driven through every roll.

For the Vigo + 1 and split policies the game lasts one pass, so the enumeration is complete and must agree
exactly. When survivors always roll again the game is unbounded: the enumeration stops after some passes,
and the exact values must lie within what the unfinished games could still add (with a cap, each pays at
most the cap; each seat's payout at most the whole pot, which the truncation bounds).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction

import pytest
from typer.testing import CliRunner

from pokna.cli.app import app as cli
from pokna_verify.game import (
    Action,
    Challenge,
    Claim,
    GameConfig,
    GameState,
    InvalidConfig,
    Phase,
    Roll,
    Start,
    Vote,
    VoteChoice,
    new_game,
    step,
    turn,
)
from pokna_verify.game.odds import LonePolicy, Policy, VotePolicy, policies_for, table_odds

F = Fraction
UNLIMITED = 10**12


def policy_action(state: GameState, policy: Policy) -> Start | Claim | Challenge | Vote:
    now = turn(state)
    if state.phase is Phase.OPEN:
        return Start(0)
    if state.phase is Phase.LONE_SURVIVOR:
        return Claim(now.seats[0]) if policy.lone is LonePolicy.CLAIM else Challenge(now.seats[0])
    choice = VoteChoice.SPLIT if policy.vote is VotePolicy.SPLIT else VoteChoice.ROLL_AGAIN
    return Vote(now.seats[0], choice)


def always(face: int) -> Callable[[int], int]:
    return lambda nonce: face


def enumerate_rake(
    config: GameConfig, policy: Policy, max_passes: int
) -> tuple[Fraction, list[Fraction], list[Fraction], Fraction]:
    """Expected rake, paid in and paid out per seat, and the unfinished mass: every roll red (3) or blue (4)."""
    seats = list(config.seats)
    rake, unfinished = F(0), F(0)
    paid_in, paid_out = [F(0)] * len(seats), [F(0)] * len(seats)
    balances = dict.fromkeys(seats, UNLIMITED)
    stack: list[tuple[GameState, Fraction]] = [(new_game(config), F(1))]
    while stack:
        state, chance = stack.pop()
        if state.is_over:
            rake += chance * state.rake
            for seat in seats:
                paid_in[seat] += chance * state.paid_in[seat]
                paid_out[seat] += chance * state.paid_out[seat]
            continue
        if state.pass_number > max_passes:
            unfinished += chance
            continue
        rolling = state.phase in {Phase.SEEKING, Phase.CHALLENGE_FAVOR, Phase.CHALLENGE_ROLL}
        action: Action = Roll(turn(state).seats[0]) if rolling else policy_action(state, policy)
        if isinstance(action, Roll | Start):
            for face in (3, 4):
                result = step(state, action, balances=balances, roll_face=always(face))
                stack.append((result.state, chance / 2))
            continue
        stack.append((step(state, action, balances=balances, roll_face=always(1)).state, chance))
    return rake, paid_in, paid_out, unfinished


TERMS = [(500, None), (500, 1), (2_500, 3), (10_000, None), (3_333, None), (1, 2)]


@pytest.mark.parametrize(("rake_bps", "rake_cap"), TERMS)
@pytest.mark.parametrize("players", [1, 2])
@pytest.mark.parametrize("policy", [policy for policy in policies_for(2) if policy.vote is VotePolicy.SPLIT])
def test_split_policies_match_the_engine_exactly(
    players: int, policy: Policy, rake_bps: int, rake_cap: int | None
) -> None:
    config = GameConfig(
        stake=7, challenge_raise=5, player_count=players, rake_bps=rake_bps, rake_cap=rake_cap
    )
    rake, paid_in, paid_out, unfinished = enumerate_rake(config, policy, max_passes=1)
    assert unfinished == 0
    odds = table_odds(config, policy)
    assert odds.expected_rake == rake
    assert [seat.expected_paid_in for seat in odds.seats] == paid_in
    assert [seat.expected_paid_out for seat in odds.seats] == paid_out
    # Money is conserved in expectation: what the seats lose, the house earns.
    assert sum(seat.expected_net for seat in odds.seats) == -odds.expected_rake
    assert odds.rake_per_unit_staked == rake / sum(paid_in)


@pytest.mark.parametrize(("rake_bps", "rake_cap"), [(500, None), (500, 1), (2_500, 3), (10_000, None)])
@pytest.mark.parametrize("lone", list(LonePolicy))
def test_roll_again_is_bracketed_by_the_truncated_engine(
    lone: LonePolicy, rake_bps: int, rake_cap: int | None
) -> None:
    config = GameConfig(stake=3, challenge_raise=2, player_count=2, rake_bps=rake_bps, rake_cap=rake_cap)
    policy = Policy(lone, VotePolicy.ROLL_AGAIN)
    passes = 10
    rake, paid_in, paid_out, unfinished = enumerate_rake(config, policy, max_passes=passes)
    assert 0 < unfinished < F(1, 10_000)
    odds = table_odds(config, policy)
    # An unfinished game has a pot of at most antes, a contribution per pass and the raises so far; it may
    # grow further, but what it can still add in expectation is bounded by the geometric tail.
    tail = unfinished * 10 * (2 * config.stake * (passes + 20) + 2 * config.challenge_raise)
    assert rake <= odds.expected_rake <= rake + (unfinished * rake_cap if rake_cap is not None else tail)
    for seat in config.seats:
        assert paid_out[seat] <= odds.seats[seat].expected_paid_out <= paid_out[seat] + tail
        assert paid_in[seat] <= odds.seats[seat].expected_paid_in <= paid_in[seat] + tail
    assert sum(seat.expected_net for seat in odds.seats) == -odds.expected_rake


def test_a_whole_pot_rake_leaves_the_seats_nothing() -> None:
    config = GameConfig(stake=2, challenge_raise=2, player_count=2, rake_bps=10_000)
    for policy in policies_for(2):
        odds = table_odds(config, policy)
        assert all(seat.expected_paid_out == 0 for seat in odds.seats)
        assert odds.expected_rake == odds.expected_staked
        assert odds.rake_per_unit_staked == 1


def test_no_rake_is_no_revenue() -> None:
    for policy in policies_for(4):
        assert table_odds(GameConfig(stake=1, challenge_raise=1, player_count=4), policy).expected_rake == 0


def test_a_cap_too_far_to_enumerate_is_refused_naming_it() -> None:
    with pytest.raises(InvalidConfig) as refused:
        table_odds(
            GameConfig(1, 1, 3, rake_bps=1, rake_cap=1000), Policy(LonePolicy.CLAIM, VotePolicy.ROLL_AGAIN)
        )
    assert refused.value.details["field"] == "rake_cap"


def test_the_cli_reports_the_operators_revenue_exactly() -> None:
    result = CliRunner().invoke(cli, ["odds", "--players", "4", "--rake-bps", "500", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert (document["rake_bps"], document["rake_cap"]) == (500, None)
    config = GameConfig(stake=1, challenge_raise=1, player_count=4, rake_bps=500)
    for entry, policy in zip(document["policies"], policies_for(4), strict=True):
        odds = table_odds(config, policy)
        assert entry["operator"]["expected_revenue"]["exact"] == str(odds.expected_rake)
        assert entry["operator"]["revenue_per_unit_staked"]["exact"] == str(odds.rake_per_unit_staked)
    # At stake 1 a pot must reach 20 before 5% of it is a whole unit: only a long roll-again game pays.
    revenues = [F(entry["operator"]["expected_revenue"]["exact"]) for entry in document["policies"]]
    assert revenues[:2] == [0, 0]  # split policies: the biggest pot is 4 antes + 4 contributions
    assert all(revenue > 0 for revenue in revenues[2:])
    text = CliRunner().invoke(cli, ["odds", "--players", "4", "--rake-bps", "500"])
    assert "Operator: expected rake" in text.output


def test_the_cli_refuses_a_rate_over_100_percent_naming_the_option() -> None:
    result = CliRunner().invoke(cli, ["odds", "--players", "4", "--rake-bps", "10001"])
    assert result.exit_code == 2
    assert "--rake-bps" in result.output
