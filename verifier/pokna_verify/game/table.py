"""Rounds at one table: the title of Vigo passes clockwise after every round.

A table has fixed positions 0..size-1, clockwise. The engine always speaks game seats (Vigo = 0); these
helpers map between the two so the shell can bind each round's seats to accounts.
"""

from __future__ import annotations

from pokna_verify.game.model import MAX_PLAYERS, MIN_PLAYERS


def _check(table_size: int, round_index: int) -> None:
    if not MIN_PLAYERS + 1 <= table_size <= MAX_PLAYERS + 1:
        raise ValueError(f"a table has {MIN_PLAYERS + 1} to {MAX_PLAYERS + 1} positions, not {table_size}")
    if round_index < 0:
        raise ValueError(f"rounds count from 0, not {round_index}")


def vigo_position(table_size: int, round_index: int) -> int:
    """Round 0's Vigo sits at position 0; each later round's Vigo is the next position clockwise."""
    _check(table_size, round_index)
    return round_index % table_size


def round_seating(table_size: int, round_index: int) -> tuple[int, ...]:
    """Table position of each game seat in round `round_index` (index = game seat, 0 being the Vigo).

    Seat order around the table never changes; only who holds the title of Vigo does, so last round's
    player 1 is this round's Vigo.
    """
    vigo = vigo_position(table_size, round_index)
    return tuple((vigo + seat) % table_size for seat in range(table_size))


def game_seat_of(table_size: int, round_index: int, position: int) -> int:
    """Inverse of `round_seating`: which game seat the person at `position` holds this round."""
    if not 0 <= position < table_size:
        raise ValueError(f"no position {position} at a table of {table_size}")
    return (position - vigo_position(table_size, round_index)) % table_size
