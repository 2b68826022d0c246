"""`pokna odds`: the integer rounding of splits is explained, with the exact EV per unit of stake."""

from __future__ import annotations

import json
from fractions import Fraction

from typer.testing import CliRunner

from pokna.cli.app import app

runner = CliRunner()


def test_at_stake_one_the_rounding_of_splits_is_explained_with_exact_fractions() -> None:
    result = runner.invoke(app, ["odds", "--players", "3"])
    assert result.exit_code == 0, result.output
    policy = result.stdout.split("Every player: lone survivor claims; survivors split\n")[1].split("\n\n")[0]
    evs = [line.split()[-1] for line in policy.splitlines()[2:6]]
    assert len(set(evs[1:])) == 3  # the players differ at stake 1: the remainder goes clockwise
    assert "differ by rounding" in policy
    # Each player's share is the same once the stake divides evenly: (1 - 3/4 ... ) by symmetry 1/4 each.
    assert "seat 0 -3/4, seat 1 +1/4, seat 2 +1/4, seat 3 +1/4." in policy


def test_a_stake_that_divides_evenly_needs_no_note_and_matches_the_exact_values() -> None:
    result = runner.invoke(app, ["odds", "--players", "3", "--stake", "12"])
    assert result.exit_code == 0, result.output
    assert "rounding" not in result.stdout
    exact = runner.invoke(app, ["odds", "--players", "3", "--json"])
    document = json.loads(exact.stdout)
    for table in document["policies"]:
        unrounded = [Fraction(seat["exact"]) for seat in table["expected_net_stakes_without_rounding"]]
        assert sum(unrounded) == 0  # money only moves between seats
        players = unrounded[1:]
        assert len(set(players)) == 1, table  # without rounding the players are symmetric
    scaled = json.loads(runner.invoke(app, ["odds", "--players", "3", "--stake", "12", "--json"]).stdout)
    for table in scaled["policies"]:
        assert [seat["expected_net_stakes"]["exact"] for seat in table["seats"]] == [
            seat["exact"] for seat in table["expected_net_stakes_without_rounding"]
        ]
