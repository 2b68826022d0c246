"""The second moments of one game's money (pokna_verify.game.odds_spread), against the rules engine driven through
every roll, and its expectations against pokna_verify.game.odds: the report's intervals rest on both."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import pytest

from pokna_verify.game import (
    Action,
    Challenge,
    Claim,
    GameConfig,
    GameState,
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
from pokna_verify.game.odds_spread import SideMoments, game_spread

F = Fraction
UNLIMITED = 10**12


def always(face: int) -> Callable[[int], int]:
    return lambda _nonce: face


def policy_action(state: GameState, policy: Policy) -> Start | Claim | Challenge | Vote:
    seat = turn(state).seats[0]
    if state.phase is Phase.OPEN:
        return Start(seat)
    if state.phase is Phase.LONE_SURVIVOR:
        return Claim(seat) if policy.lone is LonePolicy.CLAIM else Challenge(seat)
    return Vote(seat, VoteChoice.SPLIT if policy.vote is VotePolicy.SPLIT else VoteChoice.ROLL_AGAIN)


def engine_moments(config: GameConfig, policy: Policy) -> dict[str, SideMoments]:
    """Every game the rules can play under `policy` (one pass: split policies), each roll red (3) or blue (4)."""
    sides = {"vigo": SideMoments(), "players": SideMoments(), "operator": SideMoments()}
    balances = dict.fromkeys(config.seats, UNLIMITED)
    stack: list[tuple[GameState, Fraction]] = [(new_game(config), F(1))]
    while stack:
        state, chance = stack.pop()
        if state.is_over:
            vigo_in, players_in = state.paid_in[0], sum(state.paid_in[1:])
            sides["vigo"].add(chance, vigo_in, state.paid_out[0])
            sides["players"].add(chance, players_in, sum(state.paid_out[1:]))
            sides["operator"].add(chance, vigo_in + players_in, state.rake)
            continue
        rolling = state.phase in {Phase.SEEKING, Phase.CHALLENGE_FAVOR, Phase.CHALLENGE_ROLL}
        action: Action = Roll(turn(state).seats[0]) if rolling else policy_action(state, policy)
        if isinstance(action, Roll | Start):
            for face in (3, 4):
                result = step(state, action, balances=balances, roll_face=always(face))
                stack.append((result.state, chance / 2))
            continue
        stack.append((step(state, action, balances=balances, roll_face=always(1)).state, chance))
    return sides


@pytest.mark.parametrize(("rake_bps", "rake_cap"), [(0, None), (1_000, None), (2_500, 3), (500, 1)])
@pytest.mark.parametrize("players", [1, 2, 3])
@pytest.mark.parametrize("lone", list(LonePolicy))
def test_split_policies_match_the_engine_exactly(
    players: int, lone: LonePolicy, rake_bps: int, rake_cap: int | None
) -> None:
    config = GameConfig(
        stake=7, challenge_raise=5, player_count=players, rake_bps=rake_bps, rake_cap=rake_cap
    )
    policy = Policy(lone, VotePolicy.SPLIT)
    spread = game_spread(config, policy)
    assert spread.unaccounted == 0
    assert spread.sides() == engine_moments(config, policy)


@pytest.mark.parametrize(("rake_bps", "rake_cap"), [(0, None), (500, None), (500, 3)])
@pytest.mark.parametrize("players", [1, 2, 4, 11])
def test_the_expectations_are_those_of_the_exact_odds(
    players: int, rake_bps: int, rake_cap: int | None
) -> None:
    config = GameConfig(
        stake=5, challenge_raise=3, player_count=players, rake_bps=rake_bps, rake_cap=rake_cap
    )
    for policy in policies_for(players):
        spread, odds = game_spread(config, policy), table_odds(config, policy)
        exact = policy.vote is VotePolicy.SPLIT or players == 1
        # Roll again never ends for sure: what the enumeration leaves is far below anything a report shows.
        tolerance = F(0) if exact else F(1, 10**20)
        assert spread.unaccounted <= tolerance
        players_in = sum((seat.expected_paid_in for seat in odds.seats[1:]), F(0))
        players_out = sum((seat.expected_paid_out for seat in odds.seats[1:]), F(0))
        pairs = [
            (spread.vigo.paid_in, odds.seats[0].expected_paid_in),
            (spread.vigo.paid_out, odds.seats[0].expected_paid_out),
            (spread.players.paid_in, players_in),
            (spread.players.paid_out, players_out),
            (spread.operator.paid_in, odds.expected_staked),
            (spread.operator.paid_out, odds.expected_rake),
        ]
        for enumerated, exact_value in pairs:
            assert abs(enumerated - exact_value) <= tolerance, policy.label


def test_the_vigo_and_one_player_by_hand() -> None:
    """Vigo + 1, always claim: the player stakes s and takes the pot of s back half the time; the Vigo
    stakes nothing. Always challenge: a quarter of the time each side takes s + 2r after staking r more."""
    s, r = 4, 3
    config = GameConfig(stake=s, challenge_raise=r, player_count=1)
    claim = game_spread(config, Policy(LonePolicy.CLAIM, VotePolicy.SPLIT))
    assert claim.players == SideMoments(F(s), F(s, 2), F(s * s), F(s * s, 2), F(s * s, 2))
    assert claim.vigo == SideMoments(F(0), F(s, 2), F(0), F(s * s, 2), F(0))
    # Var(out - R in) for the players with R = 1/2: (s - s/2)^2 = s^2/4 either way.
    assert claim.players.spread_about(F(1, 2)) == F(s * s, 4)
    challenge = game_spread(config, Policy(LonePolicy.CHALLENGE, VotePolicy.SPLIT))
    pot = s + 2 * r
    assert challenge.players.paid_in == F(s) + F(r, 2)
    assert challenge.players.paid_out == F(pot, 4)
    assert challenge.players.paid_out_squared == F(pot * pot, 4)
    assert challenge.players.paid_in_times_out == F((s + r) * pot, 4)
