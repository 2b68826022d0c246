"""When a failed delivery is tried again: exponential backoff with jitter.

The n-th failed attempt waits `initial * 2**(n-1)` seconds, at most `max`, stretched by a random 0-25%
so that deliveries failed together do not come back together. Jitter only ever lengthens a wait, so the
nominal schedule is a lower bound: with the defaults (5 s doubling to 4 h, 18 attempts) a delivery keeps
being tried for more than a day (`retry_span`) before it is marked failed.
"""

from __future__ import annotations

import random
from datetime import timedelta

JITTER = 0.25


def nominal_wait(attempts_made: int, initial_seconds: float, max_seconds: float) -> float:
    return float(min(initial_seconds * 2 ** min(attempts_made - 1, 60), max_seconds))


def wait_after(
    attempts_made: int, initial_seconds: float, max_seconds: float, rng: random.Random | None = None
) -> timedelta:
    stretch = 1 + (rng or random).uniform(0, JITTER)
    return timedelta(seconds=nominal_wait(attempts_made, initial_seconds, max_seconds) * stretch)
