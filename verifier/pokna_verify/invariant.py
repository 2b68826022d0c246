"""Checks of states that cannot happen unless the code is wrong: a row an aggregate always answers, a
field set by the step before. `assert` says the same, but `python -O` strips every assert, and a check
that may vanish is no check: past it the code would go on with None and fail further away, or not at all.
These run in every mode and fail at once, as `BrokenInvariant`, naming what was expected.

Never for bad input: a document, a request or a file that is wrong is refused in its own words."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


class BrokenInvariant(Exception):
    """A state the code holds impossible was reached: a bug in Pokna, never bad input."""

    def __init__(self, expected: str) -> None:
        super().__init__(f"internal error, a bug: expected {expected}")


def present(value: T | None, expected: str) -> T:
    """`value`, which the code holds is never None here; `expected` says why, in a few words."""
    if value is None:
        raise BrokenInvariant(expected)
    return value


def of_type(value: object, kind: type[T], expected: str) -> T:
    """`value`, which the code holds is a `kind` here."""
    if not isinstance(value, kind):
        raise BrokenInvariant(f"{expected} (got {type(value).__name__})")
    return value


def holds(condition: bool, expected: str) -> None:
    if not condition:
        raise BrokenInvariant(expected)
