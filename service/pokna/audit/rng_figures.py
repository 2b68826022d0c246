"""The RNG's output over a period, counted and tested (pokna_verify.bundle.play_tally's roll sums). Pure.

Each roll a proof records was drawn after the game decided to draw it, so every recorded face is a fresh
draw: an honest cube gives each face 1/6 and each colour 1/2 whatever the purpose, and each roll is
independent of the one before it in its game. The tests, with scipy.stats's distributions:

- faces per purpose (and over all rolls): chi-square goodness of fit to 1/6 each, 5 degrees of freedom;
- colours per purpose: the same to 1/2 each, 1 degree of freedom;
- consecutive rolls of a game (faces, in nonce order): a 6x6 table, chi-square test of independence
  (25 degrees of freedom); the first roll of a pair is not uniform (the rules decide which rolls are
  followed by another), so independence is tested, not a uniform table;
- runs of one colour within each game: when the cube is honest each next roll changes colour with
  probability exactly 1/2, whatever came before, so the changes are compared with half the pairs (normal
  approximation). A test of runs given the colour counts (Wald-Wolfowitz) would be wrong here: the rules
  end a game on some colour sequences and not others.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import sqrt
from typing import Any

from scipy import stats

from pokna.audit.significance import Test
from pokna_verify.bundle.play_facts import FACES, PURPOSES
from pokna_verify.bundle.play_tally import RED_FACES, RollTally

MIN_EXPECTED = 5  # every cell's expected count, for the chi-square approximation (Cochran)
MIN_PAIRS_FOR_RUNS = 20
ALL = "all"


def face_test(counts: Sequence[int], key: str, title: str) -> Test:
    method = "chi-square goodness of fit to 1/6 per face"
    total = sum(counts)
    if total / FACES < MIN_EXPECTED:
        return Test(key, title, method, not_run=_too_few(total, FACES))
    result = stats.chisquare(counts)
    return Test(key, title, method, float(result.statistic), FACES - 1, float(result.pvalue))


def colour_test(counts: Sequence[int], key: str, title: str) -> Test:
    method = "chi-square goodness of fit to 1/2 per colour"
    red, blue = sum(counts[:RED_FACES]), sum(counts[RED_FACES:])
    if (red + blue) / 2 < MIN_EXPECTED:
        return Test(key, title, method, not_run=_too_few(red + blue, 2))
    result = stats.chisquare([red, blue])
    return Test(key, title, method, float(result.statistic), 1, float(result.pvalue))


def pairs_test(pairs: Sequence[Sequence[int]]) -> tuple[Test, list[list[float]] | None]:
    """The test, and each cell's standardized residual (observed - expected) / sqrt(expected)."""
    key, title = "rng.pairs", "Consecutive rolls of a game are independent"
    method = "chi-square test of independence, 6 x 6 table of (roll, next roll) faces"
    if any(sum(row) == 0 for row in pairs) or any(sum(column) == 0 for column in zip(*pairs, strict=True)):
        return Test(key, title, method, not_run="some face never appears in a pair"), None
    expected = stats.contingency.expected_freq(pairs)
    if expected.min() < MIN_EXPECTED:
        total = sum(map(sum, pairs))
        return Test(key, title, method, not_run=_too_few(total, FACES * FACES, "pairs")), None
    result = stats.chi2_contingency(pairs, correction=False)
    residuals = [
        [(observed - float(expected[i][j])) / sqrt(float(expected[i][j])) for j, observed in enumerate(row)]
        for i, row in enumerate(pairs)
    ]
    test = Test(key, title, method, float(result.statistic), int(result.dof), float(result.pvalue))
    return test, residuals


def runs_test(tally: RollTally) -> Test:
    key, title = "rng.runs", "Runs of one colour within games"
    method = "colour changes between consecutive rolls against 1/2 of the pairs, normal approximation"
    pairs = tally.transitions
    if pairs < MIN_PAIRS_FOR_RUNS:
        not_run = f"{pairs} pairs of consecutive rolls; at least {MIN_PAIRS_FOR_RUNS} needed"
        return Test(key, title, method, not_run=not_run)
    z = (tally.changes - pairs / 2) / (sqrt(pairs) / 2)
    return Test(key, title, method, z, None, float(2 * stats.norm.sf(abs(z))))


def rng_tests(tally: RollTally) -> tuple[list[Test], dict[str, Any]]:
    """Every test of the section, and the section's figures (the tests' results are put in by key)."""
    tests: list[Test] = []
    purposes: list[dict[str, Any]] = []
    everything = [sum(column) for column in zip(*tally.faces, strict=True)]
    for name, counts in [*zip(PURPOSES, tally.faces, strict=True), (ALL, everything)]:
        label = "all rolls" if name == ALL else f"{name.replace('_', ' ')} rolls"
        faces = face_test(counts, f"rng.faces.{name}", f"Faces of {label}")
        colours = colour_test(counts, f"rng.colours.{name}", f"Colours of {label}")
        tests += [faces, colours]
        purposes.append(
            {
                "purpose": name,
                "rolls": sum(counts),
                "faces": list(counts),
                "red": sum(counts[:RED_FACES]),
                "blue": sum(counts[RED_FACES:]),
                "face_test": faces.key,
                "colour_test": colours.key,
            }
        )
    pairs, residuals = pairs_test(tally.pairs)
    runs = runs_test(tally)
    tests += [pairs, runs]
    figures = {
        "rolls": tally.rolls,
        "purposes": purposes,
        "pairs": {
            "pairs": tally.transitions,
            "table": [list(row) for row in tally.pairs],
            "standardized_residuals": residuals,
            "test": pairs.key,
        },
        "runs": {
            "games": tally.sequences,
            "pairs": tally.transitions,
            "changes": tally.changes,
            "runs": tally.runs,
            "expected_runs": tally.sequences + tally.transitions / 2,
            "standard_deviation": sqrt(tally.transitions) / 2,
            "test": runs.key,
        },
    }
    return tests, figures


def _too_few(total: int, cells: int, what: str = "rolls") -> str:
    return f"{total} {what}: an expected count below {MIN_EXPECTED} in some of the {cells} cells"
