"""The RNG section's tests can tell an honest cube from a bad one: the service's own roll stream over a
large N raises no flag at the report's level, while a cube biased by a percentage point on one face, or one
that repeats itself, is flagged over the same N (fixed seeds: the outcomes are the same on every run)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import islice

from pokna.audit.rng_figures import pairs_test, rng_tests
from pokna.audit.significance import level_for
from pokna_verify.bundle.play_facts import PURPOSES, roll_code
from pokna_verify.bundle.play_tally import RollTally
from support.played_rules import honest_faces, loaded_faces

ROLLS = 150_000
# Games as the rules shape them, roughly: the favor, three seeks, and now and then a challenge.
SHAPE = ["favor", "seek", "seek", "seek", "challenge_favor", "challenge"]


def tally_of(faces: Iterator[int], rolls: int = ROLLS) -> RollTally:
    tally = RollTally()
    stream = islice(faces, rolls)
    while True:
        game = list(islice(stream, len(SHAPE)))
        if not game:
            return tally
        tally.take(
            bytes(
                roll_code(PURPOSES.index(purpose), face) for purpose, face in zip(SHAPE, game, strict=False)
            )
        )


def flagged(tally: RollTally) -> list[str]:
    tests, _ = rng_tests(tally)
    level = level_for(tests)
    return [test.key for test in tests if test.p_value is not None and test.p_value < level.per_test]


def test_an_honest_stream_raises_no_flag() -> None:
    tally = tally_of(honest_faces("report-honest-1"))
    assert tally.rolls == ROLLS
    tests, figures = rng_tests(tally)
    assert all(test.ran for test in tests), [test.not_run for test in tests if not test.ran]
    assert flagged(tally) == []
    assert figures["runs"]["pairs"] == tally.transitions == ROLLS - ROLLS // len(SHAPE)


def test_a_cube_biased_on_one_face_is_flagged() -> None:
    """Face 6 shows 17.7% of the time instead of 16.7%."""
    tally = tally_of(loaded_faces(11, face=6, extra=0.01))
    found = flagged(tally)
    assert "rng.faces.all" in found
    assert "rng.faces.seek" in found
    # Nothing about order is wrong with it.
    assert "rng.pairs" not in found
    assert "rng.runs" not in found


def sticky(seed: int, repeat: float) -> Iterator[int]:
    """Fair faces, except that each roll repeats the one before with probability `repeat`."""
    rng, previous = random.Random(seed), 1
    while True:
        previous = previous if rng.random() < repeat else rng.randint(1, 6)
        yield previous


def test_a_cube_that_repeats_itself_is_flagged_by_the_order_tests() -> None:
    found = flagged(tally_of(sticky(5, repeat=0.03)))
    assert "rng.pairs" in found
    assert "rng.runs" in found


def test_too_few_rolls_are_not_tested_and_say_why() -> None:
    tally = tally_of(honest_faces("few"), rolls=60)
    tests, _ = rng_tests(tally)
    by_key = {test.key: test for test in tests}
    assert not by_key["rng.faces.challenge"].ran
    assert "expected count below 5" in str(by_key["rng.faces.challenge"].not_run)
    assert not by_key["rng.pairs"].ran
    assert by_key["rng.colours.all"].ran


def test_the_pairs_test_is_of_independence_not_of_uniform_rows() -> None:
    """The rules decide which rolls are followed by another, so the first roll of a pair need not be
    uniform: rows of different sizes with the same proportions are independent."""
    rows = [[100 * (face + 1)] * 6 for face in range(6)]
    test, residuals = pairs_test(rows)
    assert test.p_value is not None
    assert test.p_value > 0.99
    assert residuals is not None
    assert max(abs(value) for row in residuals for value in row) < 1e-9
