"""Rules one at a time: refusals, money edge cases, timeouts."""

from __future__ import annotations

import pytest
from game_harness import ScriptedRolls, Table, no_rolls

from pokna_verify.game import (
    POT,
    Cancel,
    CannotPay,
    Challenge,
    Claim,
    GameConfig,
    GameError,
    GameState,
    InvalidConfig,
    Phase,
    Roll,
    SettleReason,
    Start,
    Timeout,
    Transfer,
    TransferKind,
    Vote,
    VoteChoice,
    new_game,
    step,
    turn,
)
from pokna_verify.game.events import EventKind

RED, BLUE = 1, 6
SPLIT, ROLL_AGAIN = VoteChoice.SPLIT, VoteChoice.ROLL_AGAIN


def rich(config: GameConfig, amount: int = 1_000) -> dict[int, int]:
    return dict.fromkeys(config.seats, amount)


def play(table: Table, *script: tuple[object, list[int]]) -> None:
    for action, faces in script:
        table.act(action, ScriptedRolls(faces, first_nonce=table.state.next_nonce))  # type: ignore[arg-type]


def refused(state: GameState, action: object, balances: dict[int, int] | None = None) -> GameError:
    with pytest.raises(GameError) as caught:
        step(state, action, balances=balances or rich(state.config), roll_face=no_rolls)  # type: ignore[arg-type]
    return caught.value


@pytest.mark.parametrize(
    ("stake", "challenge_raise", "player_count"),
    [(0, 1, 2), (-1, 1, 2), (1, 0, 2), (1, 1, 0), (1, 1, 12), (True, 1, 2)],
)
def test_config_refuses_what_the_rules_exclude(stake: int, challenge_raise: int, player_count: int) -> None:
    with pytest.raises(InvalidConfig) as caught:
        GameConfig(stake, challenge_raise, player_count)
    assert caught.value.code == "invalid_config"


def test_challenge_raise_defaults_to_the_stake() -> None:
    assert GameConfig.create(stake=7, player_count=3) == GameConfig(7, 7, 3)


def test_start_refuses_and_names_every_seat_that_cannot_ante() -> None:
    config = GameConfig.create(stake=5, player_count=4)
    balances = {0: 0, 1: 5, 2: 4, 3: 100, 4: 0}
    error = refused(new_game(config), Start(0), balances)
    assert isinstance(error, CannotPay)
    assert error.code == "cannot_pay"
    assert error.seats == (2, 4)
    assert error.to_dict()["seats"] == [2, 4]


def test_the_vigo_needs_no_money_to_start() -> None:
    config = GameConfig.create(stake=5, player_count=2)
    table = Table.seated(config, {0: 0, 1: 5, 2: 5})
    play(table, (Start(0), [RED]))
    assert table.state.pot == 10
    assert table.ledger.balances == {0: 0, 1: 0, 2: 0}


@pytest.mark.parametrize(
    ("action", "code"),
    [
        (Start(1), "not_your_turn"),
        (Start(12), "unknown_seat"),
        (Roll(0), "wrong_phase"),
        (Claim(1), "wrong_phase"),
        (Vote(1, SPLIT), "wrong_phase"),
    ],
)
def test_open_game_refusals(action: object, code: str) -> None:
    config = GameConfig.create(stake=1, player_count=3)
    assert refused(new_game(config), action).code == code


def test_seeking_refusals() -> None:
    config = GameConfig.create(stake=1, player_count=3)
    table = Table.seated(config, rich(config))
    play(table, (Start(0), [RED]))
    state = table.state
    assert refused(state, Roll(2)).code == "not_your_turn"
    assert refused(state, Roll(0)).code == "not_your_turn"
    assert refused(state, Roll(-1)).code == "unknown_seat"
    assert refused(state, Roll(4)).code == "unknown_seat"
    assert refused(state, Start(0)).code == "wrong_phase"
    assert refused(state, Cancel()).code == "wrong_phase"
    assert refused(state, Claim(1)).code == "wrong_phase"


def test_voting_refusals_and_a_second_vote() -> None:
    config = GameConfig.create(stake=1, player_count=3)
    table = Table.seated(config, rich(config))
    play(
        table, (Start(0), [RED]), (Roll(1), [RED]), (Roll(2), [BLUE]), (Roll(3), [RED]), (Vote(1, SPLIT), [])
    )
    state = table.state
    assert state.phase is Phase.VOTING
    assert refused(state, Vote(1, SPLIT)).code == "already_voted"
    assert refused(state, Vote(1, ROLL_AGAIN)).code == "already_voted"
    assert refused(state, Vote(2, SPLIT)).code == "not_your_turn"  # eliminated
    assert refused(state, Vote(0, SPLIT)).code == "not_your_turn"  # the Vigo has no vote
    not_a_choice: object = "maybe"
    assert refused(state, Vote(3, not_a_choice)).code == "invalid_vote"  # type: ignore[arg-type]
    assert refused(state, Roll(3)).code == "wrong_phase"


def test_actions_after_the_end_are_refused_as_game_over() -> None:
    config = GameConfig.create(stake=1, player_count=1)
    table = Table.seated(config, rich(config))
    play(table, (Start(0), [RED]), (Roll(1), [BLUE]))
    assert table.state.phase is Phase.SETTLED
    for action in (Roll(1), Claim(1), Timeout(), Cancel(), Start(0), Roll(99)):
        assert refused(table.state, action).code == "game_over"
    assert turn(table.state).seats == ()


def test_no_survivors_gives_the_vigo_the_pot() -> None:
    config = GameConfig.create(stake=3, player_count=2)
    table = Table.seated(config, rich(config))
    play(table, (Start(0), [BLUE]), (Roll(1), [RED]), (Roll(2), [RED]))
    assert table.state.outcome is not None
    assert table.state.outcome.reason is SettleReason.NO_SURVIVORS
    assert table.results[-1].transfers == (Transfer(TransferKind.PAYOUT, POT, 0, 6),)


def test_a_lone_survivor_who_claims_takes_the_pot() -> None:
    config = GameConfig.create(stake=3, player_count=3)
    table = Table.seated(config, rich(config))
    play(table, (Start(0), [RED]), (Roll(1), [BLUE]), (Roll(2), [RED]), (Roll(3), [BLUE]))
    assert turn(table.state).seats == (2,)
    assert refused(table.state, Claim(1)).code == "not_your_turn"
    play(table, (Claim(2), []))
    assert table.results[-1].transfers == (Transfer(TransferKind.PAYOUT, POT, 2, 9),)
    assert table.ledger.balances[2] == 1_000 - 3 + 9


def test_a_won_challenge_pays_the_whole_pot_including_both_raises() -> None:
    config = GameConfig(stake=2, challenge_raise=5, player_count=1)
    table = Table.seated(config, rich(config))
    play(table, (Start(0), [RED]), (Roll(1), [RED]), (Challenge(1), []))
    assert table.state.pot == 2 + 5 + 5
    assert table.state.phase is Phase.CHALLENGE_FAVOR
    assert refused(table.state, Roll(1)).code == "not_your_turn"
    play(table, (Roll(0), [BLUE]))  # a new favor: blue
    assert refused(table.state, Roll(0)).code == "not_your_turn"
    play(table, (Roll(1), [BLUE]))
    assert table.results[-1].transfers == (Transfer(TransferKind.PAYOUT, POT, 1, 12),)
    assert table.ledger.balances == {0: 1_000 - 5, 1: 1_000 + 5}


def test_a_challenge_the_player_cannot_match_is_refused_and_claim_remains() -> None:
    config = GameConfig(stake=2, challenge_raise=5, player_count=1)
    table = Table.seated(config, {0: 100, 1: 6})
    play(table, (Start(0), [RED]), (Roll(1), [RED]))
    error = refused(table.state, Challenge(1), dict(table.ledger.balances))
    assert error.code == "challenge_unaffordable"
    play(table, (Claim(1), []))
    assert table.ledger.balances == {0: 100, 1: 6}


def test_a_vigo_who_cannot_raise_loses_the_pot_to_the_challenger() -> None:
    config = GameConfig(stake=2, challenge_raise=5, player_count=2)
    table = Table.seated(config, {0: 4, 1: 50, 2: 50})
    play(table, (Start(0), [RED]), (Roll(1), [RED]), (Roll(2), [BLUE]), (Challenge(1), []))
    assert table.state.outcome is not None
    assert table.state.outcome.reason is SettleReason.VIGO_BUST
    assert table.results[-1].transfers == (Transfer(TransferKind.PAYOUT, POT, 1, 4),)
    assert EventKind.VIGO_BUST in {event.kind for event in table.results[-1].events}


def test_a_vigo_who_cannot_pay_per_survivor_splits_the_pot_at_once() -> None:
    config = GameConfig.create(stake=2, player_count=3)
    table = Table.seated(config, {0: 5, 1: 9, 2: 9, 3: 9})  # three survivors need 6
    play(table, (Start(0), [RED]), (Roll(1), [RED]), (Roll(2), [RED]), (Roll(3), [RED]))
    assert table.state.outcome is not None
    assert table.state.outcome.reason is SettleReason.VIGO_BUST
    assert table.results[-1].transfers == tuple(
        Transfer(TransferKind.SPLIT, POT, seat, 2) for seat in (1, 2, 3)
    )
    assert table.ledger.balances == {0: 5, 1: 9, 2: 9, 3: 9}


def test_the_vigo_pays_again_after_every_pass_with_several_survivors() -> None:
    config = GameConfig.create(stake=1, player_count=2)
    table = Table.seated(config, {0: 3, 1: 9, 2: 9})
    play(table, (Start(0), [RED]), (Roll(1), [RED]), (Roll(2), [RED]))
    assert table.state.pot == 4
    play(table, (Vote(2, ROLL_AGAIN), []), (Roll(1), [RED]), (Roll(2), [RED]))
    # The Vigo has 1 left but two survivors need 2: bust, so the pot of 4 is split.
    assert table.state.outcome is not None
    assert table.state.outcome.reason is SettleReason.VIGO_BUST
    assert table.ledger.balances == {0: 1, 1: 10, 2: 10}


def test_one_roll_again_vote_decides_without_waiting_for_the_rest() -> None:
    config = GameConfig.create(stake=1, player_count=3)
    table = Table.seated(config, rich(config))
    play(table, (Start(0), [RED]), (Roll(1), [RED]), (Roll(2), [RED]), (Roll(3), [RED]))
    play(table, (Vote(2, ROLL_AGAIN), []))
    assert table.state.phase is Phase.SEEKING
    assert table.state.to_roll == (1, 2, 3)
    assert table.state.votes == ()
    assert table.state.pot == 3 + 3


def test_split_needs_every_survivor_and_hands_the_remainder_clockwise() -> None:
    config = GameConfig.create(stake=1, player_count=4)
    table = Table.seated(config, rich(config))
    play(table, (Start(0), [RED]), (Roll(1), [RED]), (Roll(2), [BLUE]), (Roll(3), [RED]), (Roll(4), [RED]))
    assert table.state.pot == 4 + 3
    play(table, (Vote(4, SPLIT), []), (Vote(1, SPLIT), []))
    assert table.state.phase is Phase.VOTING
    play(table, (Vote(3, SPLIT), []))
    # 7 among three: 2 each, the one left over to seat 1, the first clockwise after the Vigo.
    assert table.results[-1].transfers == (
        Transfer(TransferKind.SPLIT, POT, 1, 3),
        Transfer(TransferKind.SPLIT, POT, 3, 2),
        Transfer(TransferKind.SPLIT, POT, 4, 2),
    )


def test_cancel_moves_nothing_and_ends_the_game() -> None:
    config = GameConfig.create(stake=1, player_count=2)
    result = step(new_game(config), Cancel(), balances={}, roll_face=no_rolls)
    assert result.state.phase is Phase.CANCELLED
    assert result.transfers == ()
    assert [event.kind for event in result.events] == [EventKind.CANCELLED]


def test_timeout_defaults() -> None:
    config = GameConfig.create(stake=1, player_count=3)
    assert turn(new_game(config)).default_action == "cancel"
    opened = step(new_game(config), Timeout(), balances={}, roll_face=no_rolls)
    assert opened.state.phase is Phase.CANCELLED
    assert [event.kind for event in opened.events] == [EventKind.TIMED_OUT, EventKind.CANCELLED]

    table = Table.seated(config, rich(config))
    play(table, (Start(0), [RED]), (Timeout(), [RED]))  # rolls for seat 1
    assert table.state.to_roll == (2, 3)
    play(table, (Roll(2), [RED]), (Timeout(), [RED]), (Vote(3, SPLIT), []))
    result = table.act(Timeout(), ScriptedRolls())  # seats 1 and 2 default to split
    assert result.events[0].to_dict() == {
        "kind": "timed_out",
        "phase": "voting",
        "seats": [1, 2],
        "default_action": "split",
    }
    assert table.state.outcome is not None
    assert table.state.outcome.reason is SettleReason.SPLIT


def test_timeout_for_a_lone_survivor_claims_and_for_challenge_rolls() -> None:
    config = GameConfig.create(stake=1, player_count=1)
    table = Table.seated(config, rich(config))
    play(table, (Start(0), [RED]), (Roll(1), [RED]))
    claimed = step(table.state, Timeout(), balances=rich(config), roll_face=no_rolls)
    assert claimed.state.outcome is not None
    assert claimed.state.outcome.reason is SettleReason.CLAIMED
    play(table, (Challenge(1), []), (Timeout(), [RED]))
    assert table.state.phase is Phase.CHALLENGE_ROLL
    play(table, (Timeout(), [RED]))
    assert table.state.outcome is not None
    assert table.state.outcome.reason is SettleReason.CHALLENGE_WON


def test_a_refused_action_draws_no_roll_and_a_bad_face_is_refused() -> None:
    config = GameConfig.create(stake=1, player_count=1)
    state = new_game(config)
    with pytest.raises(GameError) as caught:
        step(state, Start(0), balances=rich(config), roll_face=lambda nonce: 7)
    assert caught.value.code == "invalid_roll"
    assert state == new_game(config)
    with pytest.raises(CannotPay):
        step(state, Start(0), balances={}, roll_face=no_rolls)


def test_a_challenge_may_spend_both_balances_to_exactly_zero() -> None:
    # The one step that takes money from two seats: each is held to its own balance, to the unit.
    config = GameConfig(stake=1, challenge_raise=3, player_count=1)
    table = Table.seated(config, {0: 3, 1: 4})
    play(table, (Start(0), [RED]), (Roll(1), [RED]))
    result = table.act(Challenge(1), ScriptedRolls())
    assert [transfer.amount for transfer in result.transfers] == [3, 3]
    assert table.ledger.balances == {0: 0, 1: 0}
