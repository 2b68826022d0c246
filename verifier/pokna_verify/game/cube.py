"""The chance cube: six faces, three red and three blue."""

from __future__ import annotations

from enum import StrEnum

FACES = range(1, 7)


class Color(StrEnum):
    RED = "red"
    BLUE = "blue"


def color_of(face: int) -> Color:
    """Faces 1-3 are red, 4-6 blue: exactly even odds."""
    if face not in FACES:
        raise ValueError(f"a chance cube has faces 1-6, not {face}")
    return Color.RED if face <= 3 else Color.BLUE
