"""Dividing a pot among survivors in whole minor units."""

from __future__ import annotations

from pokna_verify.game.model import Payout


def split_pot(pot: int, survivors: tuple[int, ...]) -> tuple[Payout, ...]:
    """Equal shares; the indivisible remainder goes one unit at a time clockwise from the Vigo.

    Survivors are seat numbers and seats are numbered clockwise from the Vigo, so clockwise order is
    ascending seat order. Nobody's share differs from another's by more than one unit.
    """
    if not survivors:
        raise ValueError("a pot is split among at least one survivor")
    if pot < 0:
        raise ValueError(f"cannot split a negative pot {pot}")
    share, remainder = divmod(pot, len(survivors))
    ordered = sorted(survivors)
    return tuple(Payout(seat, share + (1 if index < remainder else 0)) for index, seat in enumerate(ordered))
