"""`pokna odds` (lives with the game tests: it is a thin view over pokna_verify.game.odds)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import pokna.cli.odds  # noqa: F401  (registers the command)
from pokna.cli.app import app

runner = CliRunner()


def test_json_gives_exact_fractions_for_one_player() -> None:
    result = runner.invoke(app, ["odds", "--players", "1", "--stake", "4", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["challenge_raise"] == 4
    policies = {(entry["lone"], entry["vote"]): entry for entry in document["policies"]}
    assert set(policies) == {("claim", "split"), ("challenge", "split")}
    vigo, player = policies["claim", "split"]["seats"]
    assert player["win"] == {"exact": "1/2", "approx": 0.5}
    assert player["expected_net"]["exact"] == "-2"
    assert player["expected_net_stakes"]["exact"] == "-1/2"
    assert vigo["role"] == "vigo"


def test_table_has_a_row_per_seat_and_a_section_per_policy() -> None:
    result = runner.invoke(app, ["odds", "-n", "3", "--challenge-raise", "2"])
    assert result.exit_code == 0, result.output
    assert "challenge raise 2" in result.output
    assert result.output.count("Every player:") == 4
    assert result.output.count("player 3") == 4
    assert "50.00%" in result.output  # always claim + split: a player wins iff they survive pass 1


def test_impossible_tables_are_refused() -> None:
    for arguments in (
        ["-n", "0"],
        ["-n", "12"],
        ["-n", "2", "--stake", "0"],
        ["-n", "2", "--challenge-raise", "-1"],
    ):
        result = runner.invoke(app, ["odds", *arguments])
        assert result.exit_code == 2, (arguments, result.output)
