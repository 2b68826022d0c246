"""How the period report decides what to flag, and what it says about it in plain words.

Every figure that chance could move is a test with a p-value: the chance that fair dice (an honest RNG,
and the rules as stated) would give a result at least this far from what is expected. The report runs
many such tests at once, so some small p-values are expected by chance alone; it therefore flags a test
only when its p-value is below FAMILY_ALPHA divided by the number of tests run (the Bonferroni
correction): a fair game with an honest RNG raises any flag at all in at most about one report in a
hundred, whatever the number of tests. The same level sets the RTP intervals' confidence: a realized
RTP outside its interval is exactly a p-value below the level.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

FAMILY_ALPHA: Final = 0.01
CORRECTION: Final = "bonferroni"


@dataclass(frozen=True)
class Test:
    """One test of the report: `p_value` None when it was not run, and `not_run` says why."""

    key: str
    title: str
    method: str
    statistic: float | None = None
    degrees_of_freedom: int | None = None
    p_value: float | None = None
    not_run: str | None = None

    @property
    def ran(self) -> bool:
        return self.p_value is not None

    def to_json(self, level: float) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "method": self.method,
            "statistic": self.statistic,
            "degrees_of_freedom": self.degrees_of_freedom,
            "p_value": self.p_value,
            "flagged": self.p_value is not None and self.p_value < level,
            "not_run": self.not_run,
        }


@dataclass(frozen=True)
class Level:
    """The flag level for `tests_run` tests: each is flagged when its p-value is below `per_test`."""

    tests_run: int

    @property
    def per_test(self) -> float:
        return FAMILY_ALPHA / max(self.tests_run, 1)

    @property
    def confidence(self) -> float:
        """Of each interval: chance alone keeps a figure inside it this often."""
        return 1 - self.per_test

    def to_json(self, flags: int) -> dict[str, Any]:
        return {
            "family_alpha": FAMILY_ALPHA,
            "correction": CORRECTION,
            "tests_run": self.tests_run,
            "per_test_level": self.per_test,
            "interval_confidence": self.confidence,
            "flags": flags,
            "meaning": meaning(self),
        }


def level_for(tests: Sequence[Test]) -> Level:
    return Level(sum(test.ran for test in tests))


def meaning(level: Level) -> list[str]:
    """What a p-value does and does not mean, with this report's numbers, as the page states it."""
    return [
        "A p-value is the chance that fair dice, an honest RNG and the stated rules would give a result at "
        "least this far from what is expected. A small one is a reason to look closer, not proof of a "
        "fault; a large one is not proof that all is well (a small bias needs many rolls to show).",
        f"This report ran {level.tests_run} tests. With many tests some small p-values are expected by "
        "chance alone (about 1 in 20 falls below 0.05), so a test is flagged only when its p-value is below "
        f"{FAMILY_ALPHA} / {level.tests_run} = {level.per_test:.2g} (Bonferroni correction). A fair game "
        f"with an honest RNG raises any flag at all in at most about {FAMILY_ALPHA:.0%} of reports.",
        f"Each RTP interval is where chance alone keeps the realized RTP with {level.confidence:.3%} "
        "confidence (the same level): a figure outside it is flagged.",
        "The p-values rest on approximations, stated beside each test: the chi-square distribution for "
        "counts (run only when every expected count is at least 5) and the normal distribution for RTP "
        "and runs (RTP tested from 30 games of a table on).",
    ]
