"""When a failed delivery is tried again: exponential backoff with jitter.

The n-th failed attempt waits `initial * 2**(n-1)` seconds, at most `max`, stretched by a random 0-25%
so that deliveries failed together do not come back together. Jitter only ever lengthens a wait, so the
nominal schedule is a lower bound: with the defaults (5 s doubling to 4 h, 18 attempts) a delivery keeps
being tried for more than a day (`retry_span`) before it is marked failed.

A receiver that answers 429 or 503 with `Retry-After` (RFC 9110, 10.2.3) is waited for as long as it asks
when that is longer than the schedule's next step, but never longer than the schedule's largest step
(`max`): a receiver cannot park a delivery for longer than the schedule would, nor make it come back
sooner. Both forms are read, a number of seconds and an HTTP-date (the IMF-fixdate, and the obsolete RFC
850 and asctime forms recipients must accept); anything else, and a moment already past, is ignored.
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

JITTER = 0.25
MOST_ASKED_SECONDS = 10**9  # a delta-seconds longer than this (about 31 years) is read as this
_DELTA_SECONDS = re.compile(r"[0-9]+")


def nominal_wait(attempts_made: int, initial_seconds: float, max_seconds: float) -> float:
    return float(min(initial_seconds * 2 ** min(attempts_made - 1, 60), max_seconds))


def wait_after(
    attempts_made: int,
    initial_seconds: float,
    max_seconds: float,
    rng: random.Random | None = None,
    asked_seconds: float | None = None,
) -> timedelta:
    """The wait before the next attempt: the schedule's step with its jitter, or what the receiver asked
    (`asked_seconds`, from its `Retry-After`) if that is longer, at most `max_seconds`."""
    stretch = 1 + (rng or random).uniform(0, JITTER)
    scheduled = nominal_wait(attempts_made, initial_seconds, max_seconds) * stretch
    asked = 0.0 if asked_seconds is None else min(asked_seconds, max_seconds)
    return timedelta(seconds=max(scheduled, asked))


def asked_wait(retry_after: str | None, now: datetime) -> float | None:
    """The seconds from `now` a `Retry-After` value asks to wait; None for a value that is neither form,
    or asks for no wait at all."""
    if retry_after is None:
        return None
    text = retry_after.strip()
    if _DELTA_SECONDS.fullmatch(text):
        digits = text.lstrip("0")  # 1*DIGIT: "007" is 7 s; the length read is that of the number itself
        seconds = MOST_ASKED_SECONDS if len(digits) > 9 else int(digits or "0")
        return float(seconds) if seconds > 0 else None
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if moment.tzinfo is None:  # asctime's form carries no zone: an HTTP-date is always GMT
        moment = moment.replace(tzinfo=UTC)
    until = (moment - now).total_seconds()
    return until if until > 0 else None
