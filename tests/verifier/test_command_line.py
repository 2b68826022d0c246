"""`pokna-verify`'s own command line (argparse), where it cannot be the service's (Click's): help, version,
usage mistakes. What the commands answer is tested through both command lines (the `verify_cli` fixture)."""

from __future__ import annotations

import pytest

from pokna_verify.cli import main


def test_no_command_shows_both_and_is_a_usage_mistake(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    shown = capsys.readouterr().err
    assert shown.startswith("usage: pokna-verify ")
    assert "proof" in shown
    assert "audit" in shown


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["proof"], "the following arguments are required: SOURCE"),
        (["audit"], "the following arguments are required: EXPORT.jsonl|BUNDLE.jsonl"),
        (["proof", "p.json", "--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["audit", "b.jsonl", "--processes", "0"], "--processes: 0 is not 1 or more"),
        (["audit", "b.jsonl", "--processes", "two"], "--processes: 'two' is not a whole number"),
        (["roll"], "invalid choice: 'roll'"),
    ],
)
def test_a_usage_mistake_exits_2_naming_it(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert says in captured.err


def test_help_exits_0_and_each_command_names_its_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    for command, codes in (
        ("proof", ("0 valid", "1 invalid", "2 unusable input", "3 not revealed yet", "4 partly verified")),
        ("audit", ("0 valid", "1 invalid", "2 unusable input", "3 not revealed")),
    ):
        assert main([command, "--help"]) == 0
        shown = " ".join(capsys.readouterr().out.split())
        assert shown.startswith(f"usage: pokna-verify {command} ")
        for said in codes:
            assert said in shown


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("pokna-verify ")
