"""Odds: hand-derived small cases, and agreement with the engine enumerated exhaustively."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import pytest

from pokna_verify.game import (
    Challenge,
    Claim,
    GameConfig,
    GameState,
    Phase,
    Roll,
    SettleReason,
    Start,
    Vote,
    VoteChoice,
    new_game,
    step,
    turn,
)
from pokna_verify.game.odds import LonePolicy, Policy, SeatOdds, VotePolicy, policies_for, table_odds

F = Fraction
CLAIM_SPLIT = Policy(LonePolicy.CLAIM, VotePolicy.SPLIT)
CHALLENGE_SPLIT = Policy(LonePolicy.CHALLENGE, VotePolicy.SPLIT)
CLAIM_AGAIN = Policy(LonePolicy.CLAIM, VotePolicy.ROLL_AGAIN)
CHALLENGE_AGAIN = Policy(LonePolicy.CHALLENGE, VotePolicy.ROLL_AGAIN)


def test_one_player_who_always_claims_wins_iff_the_first_roll_matches() -> None:
    odds = table_odds(GameConfig.create(stake=3, player_count=1), CLAIM_SPLIT)
    vigo, player = odds.seats
    assert player.win == F(1, 2)
    assert vigo.win == F(1, 2)
    # The player stakes 3 to win a pot of 3 (their own ante) half the time.
    assert player.expected_net == F(3, 2) - 3
    assert vigo.expected_net == F(3, 2)


@pytest.mark.parametrize("challenge_raise", [1, 5, 40])
def test_one_player_who_always_challenges(challenge_raise: int) -> None:
    # Survive (1/2), then match the Vigo's new colour (1/2): the whole pot S + 2R a quarter of the time.
    stake = 2
    odds = table_odds(GameConfig(stake, challenge_raise, 1), CHALLENGE_SPLIT)
    player = odds.seats[1]
    assert player.whole_pot == F(1, 4)
    assert player.expected_paid_in == stake + F(challenge_raise, 2)
    assert player.expected_paid_out == F(stake + 2 * challenge_raise, 4)
    # The raise is an even bet, so it cancels out: the loss is 3/4 of a stake whatever R is.
    assert player.expected_net == -F(3, 4) * stake


def test_two_players_always_claim_and_split_break_even() -> None:
    # Survivor sets {}, {1}, {2}, {1,2}, each 1/4. Alone: the pot of 2S. Together: the Vigo adds 2S, and
    # each takes 2S. Each player gets 2S half the time for an ante of S; the Vigo pays 2S or takes 2S.
    odds = table_odds(GameConfig.create(stake=5, player_count=2), CLAIM_SPLIT)
    vigo, first, second = odds.seats
    for player in (first, second):
        assert player.whole_pot == F(1, 4)
        assert player.split_share == F(1, 4)
        assert player.expected_net == 0
    assert vigo.whole_pot == F(1, 4)
    assert vigo.expected_net == 0


def test_two_players_always_roll_again_and_claim() -> None:
    # From two rolling: none 1/4 (Vigo), one 1/2 (that player), both 1/4 (the Vigo pays 2S, again).
    # P(Vigo) = 1/4 / (1 - 1/4) = 1/3; each player 1/3. Expected Vigo payments: 2S/4 / (3/4) = 2S/3.
    # The pot at the end is 2S plus the Vigo's payments, independent of who wins, so each side takes
    # (2S + 2S/3) / 3 = 8S/9 on average.
    stake = 9
    odds = table_odds(GameConfig.create(stake=stake, player_count=2), CLAIM_AGAIN)
    vigo, first, second = odds.seats
    assert vigo.whole_pot == F(1, 3)
    assert first.whole_pot == second.whole_pot == F(1, 3)
    assert vigo.expected_paid_in == F(2 * stake, 3)
    assert first.expected_paid_out == F(8 * stake, 9)
    assert first.expected_net == F(8 * stake, 9) - stake
    assert vigo.expected_net == F(8 * stake, 9) - F(2 * stake, 3)


def test_three_players_always_roll_again_and_claim_vigo_chance() -> None:
    # From three: none 1/8, one 3/8, two 3/8 (then 1/3 for the Vigo), three 1/8 (loop).
    # P(Vigo) = (1/8 + 3/8 * 1/3) / (7/8) = 2/7.
    odds = table_odds(GameConfig.create(stake=1, player_count=3), CLAIM_AGAIN)
    assert odds.seats[0].whole_pot == F(2, 7)
    assert all(seat.whole_pot == F(5, 21) for seat in odds.seats[1:])


@pytest.mark.parametrize("players", range(1, 12))
def test_always_claim_and_split_a_player_wins_iff_they_survive_the_first_pass(players: int) -> None:
    odds = table_odds(GameConfig.create(stake=1, player_count=players), CLAIM_SPLIT)
    assert odds.seats[0].win == F(1, 2**players)
    assert all(seat.win == F(1, 2) for seat in odds.seats[1:])


@pytest.mark.parametrize("players", range(1, 12))
@pytest.mark.parametrize("stake", [1, 7])
def test_the_game_is_zero_sum_and_probabilities_are_probabilities(players: int, stake: int) -> None:
    for policy in policies_for(players):
        odds = table_odds(GameConfig(stake, 2 * stake + 1, players), policy)
        assert sum(seat.expected_net for seat in odds.seats) == 0
        assert sum(seat.whole_pot for seat in odds.seats) <= 1
        assert all(0 <= seat.win <= 1 for seat in odds.seats)
        if policy.vote is VotePolicy.ROLL_AGAIN and players > 1:
            assert sum(seat.whole_pot for seat in odds.seats) == 1


def test_one_player_has_no_vote_policy() -> None:
    assert {policy.vote for policy in policies_for(1)} == {VotePolicy.SPLIT}
    assert len(policies_for(3)) == 4


# --- agreement with the engine --------------------------------------------------------------------

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


def enumerate_engine(
    config: GameConfig, policy: Policy, faces: tuple[int, ...], max_passes: int
) -> tuple[list[SeatOdds], Fraction]:
    """Drive the engine through every roll (each face equally likely); return odds and unfinished mass."""
    seats = list(config.seats)
    whole = dict.fromkeys(seats, F(0))
    share = dict.fromkeys(seats, F(0))
    paid_in = dict.fromkeys(seats, F(0))
    paid_out = dict.fromkeys(seats, F(0))
    unfinished = F(0)
    balances = dict.fromkeys(seats, UNLIMITED)
    stack: list[tuple[GameState, Fraction]] = [(new_game(config), F(1))]
    weight = F(1, len(faces))
    while stack:
        state, chance = stack.pop()
        if state.is_over:
            assert state.outcome is not None
            shared = state.outcome.reason is SettleReason.SPLIT
            for payout in state.outcome.payouts:
                (share if shared else whole)[payout.seat] += chance
            for seat in seats:
                paid_in[seat] += chance * state.paid_in[seat]
                paid_out[seat] += chance * state.paid_out[seat]
            continue
        if state.pass_number > max_passes:
            unfinished += chance
            continue
        if state.phase in {Phase.SEEKING, Phase.CHALLENGE_FAVOR, Phase.CHALLENGE_ROLL}:
            for face in faces:
                roll = Roll(turn(state).seats[0])
                result = step(state, roll, balances=balances, roll_face=always(face))
                stack.append((result.state, chance * weight))
            continue
        action = policy_action(state, policy)
        if isinstance(action, Start):  # the one decision that rolls: branch over the favor
            for face in faces:
                result = step(state, action, balances=balances, roll_face=always(face))
                stack.append((result.state, chance * weight))
            continue
        result = step(state, action, balances=balances, roll_face=lambda nonce: 1)
        stack.append((result.state, chance))
    odds = [SeatOdds(seat, whole[seat], share[seat], paid_in[seat], paid_out[seat]) for seat in seats]
    return odds, unfinished


@pytest.mark.parametrize("players", [1, 2, 3])
@pytest.mark.parametrize("policy", [CLAIM_SPLIT, CHALLENGE_SPLIT])
def test_split_policies_match_the_engine_exactly(players: int, policy: Policy) -> None:
    config = GameConfig(stake=2, challenge_raise=3, player_count=players)
    faces = (1, 2, 3, 4, 5, 6) if players < 3 else (2, 5)
    engine, unfinished = enumerate_engine(config, policy, faces, max_passes=1)
    assert unfinished == 0
    assert list(table_odds(config, policy).seats) == engine


@pytest.mark.parametrize("players", [2, 3])
@pytest.mark.parametrize("policy", [CLAIM_AGAIN, CHALLENGE_AGAIN])
def test_roll_again_policies_are_bracketed_by_the_truncated_engine(players: int, policy: Policy) -> None:
    config = GameConfig(stake=1, challenge_raise=2, player_count=players)
    engine, unfinished = enumerate_engine(config, policy, (3, 4), max_passes=8)
    assert 0 < unfinished < F(1, 1000)
    for exact, truncated in zip(table_odds(config, policy).seats, engine, strict=True):
        assert truncated.whole_pot <= exact.whole_pot <= truncated.whole_pot + unfinished
        assert exact.split_share == truncated.split_share == 0
