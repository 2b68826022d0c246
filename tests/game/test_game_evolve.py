"""`evolve` makes the copy `dataclasses.replace` makes, and leaves to it every class whose `__init__` does
more than store its fields (pokna_verify.game.evolve)."""

from __future__ import annotations

import dataclasses
from dataclasses import InitVar, dataclass, field
from functools import cached_property

import pytest

from pokna_verify.game.errors import InvalidConfig
from pokna_verify.game.evolve import evolve
from pokna_verify.game.model import GameConfig, Phase, new_game


@dataclass(frozen=True, slots=True)
class Slotted:
    first: int
    second: tuple[int, ...]
    third: str | None = None


@dataclass(frozen=True)
class Cached:
    first: int
    second: int

    @cached_property
    def total(self) -> int:
        return self.first + self.second


@dataclass(frozen=True)
class WithInitVar:
    first: int
    second: int
    scale: InitVar[int] = 1


@dataclass(frozen=True)
class OwnInit:
    first: int
    second: int

    def __init__(self, first: int, second: int) -> None:
        object.__setattr__(self, "first", abs(first))
        object.__setattr__(self, "second", abs(second))


@dataclass
class Derived:
    first: int
    second: int
    total: int = field(init=False, default=0)


def _same(one: object, other: object) -> None:
    assert type(one) is type(other)
    names = [item.name for item in dataclasses.fields(one)]  # type: ignore[arg-type]
    assert [getattr(one, name) for name in names] == [getattr(other, name) for name in names]


def test_a_game_state_and_a_slotted_record_are_copied_as_replace_copies_them() -> None:
    state = new_game(GameConfig.create(stake=5, player_count=3))
    for record, changes in (
        (state, {"pot": 10, "paid_in": (0, 5, 5, 0)}),
        (state, {"phase": Phase.SEEKING}),
        (Slotted(1, (2, 3)), {"third": "x"}),
        (Slotted(1, (2, 3), "y"), {"first": 4, "second": ()}),
    ):
        copied = evolve(record, **changes)
        _same(copied, dataclasses.replace(record, **changes))
        assert copied == dataclasses.replace(record, **changes)
        assert copied is not record
        _same(evolve(record), record)
    with pytest.raises(dataclasses.FrozenInstanceError):
        evolve(state, pot=1).pot = 2  # type: ignore[misc]


def test_what_replace_refuses_is_refused_the_same_way() -> None:
    state = new_game(GameConfig.create(stake=5, player_count=3))
    with pytest.raises(TypeError, match="unexpected keyword argument 'pots'"):
        evolve(state, pots=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'fourth'"):
        evolve(Slotted(1, ()), fourth=1)
    with pytest.raises(InvalidConfig):  # GameConfig validates in __post_init__: it still does
        evolve(GameConfig.create(stake=5, player_count=3), stake=0)
    with pytest.raises(ValueError, match="init=False"):
        evolve(Derived(1, 2), total=3)


def test_classes_whose_init_does_more_are_built_by_it() -> None:
    cached = Cached(1, 2)
    assert cached.total == 3  # remembered in the record's __dict__
    assert evolve(cached, second=5).total == 6
    assert evolve(WithInitVar(1, 2), first=3, scale=2) == WithInitVar(3, 2)
    derived = evolve(Derived(1, 2), second=3)
    assert (derived.first, derived.second, derived.total) == (1, 3, 0)
    assert evolve(OwnInit(1, 2), second=-3) == OwnInit(1, 3)


def test_the_records_an_action_copies_take_the_cheap_way() -> None:
    """Were dataclasses to write `__init__` otherwise, these would still be copied, by `replace`: this
    says the saving is still there."""
    from pokna.dealer.action.locked import LockedGame
    from pokna.dealer.records import GameRecord, SeatRecord
    from pokna_verify.game.evolve import _copying
    from pokna_verify.game.model import GameState

    assert all(_copying(kind) is not None for kind in (GameState, GameRecord, SeatRecord, LockedGame))
    assert _copying(GameConfig) is None  # it checks its fields in __post_init__
