"""Rounds at a table and splitting a pot: small pure helpers, checked by hand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pokna_verify.game import Payout, game_seat_of, round_seating, split_pot, vigo_position


def test_the_title_of_vigo_passes_clockwise_each_round() -> None:
    assert round_seating(5, 0) == (0, 1, 2, 3, 4)
    assert round_seating(5, 1) == (1, 2, 3, 4, 0)  # last round's player 1 is the Vigo
    assert round_seating(5, 4) == (4, 0, 1, 2, 3)
    assert round_seating(5, 5) == (0, 1, 2, 3, 4)  # everyone has been Vigo once
    assert [vigo_position(3, k) for k in range(7)] == [0, 1, 2, 0, 1, 2, 0]


@given(st.integers(2, 12), st.integers(0, 100))
def test_seating_is_a_rotation_and_game_seat_of_inverts_it(size: int, round_index: int) -> None:
    seating = round_seating(size, round_index)
    assert sorted(seating) == list(range(size))
    for seat, position in enumerate(seating):
        assert game_seat_of(size, round_index, position) == seat
    assert all((seating[seat + 1] - seating[seat]) % size == 1 for seat in range(size - 1))


@pytest.mark.parametrize(("size", "round_index"), [(1, 0), (13, 0), (4, -1)])
def test_seating_refuses_impossible_tables(size: int, round_index: int) -> None:
    with pytest.raises(ValueError, match=r"table|rounds"):
        round_seating(size, round_index)


def test_split_remainder_goes_clockwise_from_the_vigo() -> None:
    assert split_pot(8, (4, 1, 3)) == (Payout(1, 3), Payout(3, 3), Payout(4, 2))
    assert split_pot(6, (2, 5)) == (Payout(2, 3), Payout(5, 3))


@given(st.integers(0, 10**6), st.sets(st.integers(1, 11), min_size=1))
def test_split_pays_out_exactly_the_pot_and_shares_differ_by_at_most_one(pot: int, seats: set[int]) -> None:
    payouts = split_pot(pot, tuple(seats))
    assert sum(payout.amount for payout in payouts) == pot
    amounts = [payout.amount for payout in payouts]
    assert max(amounts) - min(amounts) <= 1
    assert amounts == sorted(amounts, reverse=True)  # earlier seats clockwise never get less
    assert [payout.seat for payout in payouts] == sorted(seats)
