"""`pokna-verify`'s own command line (argparse), where it cannot be the service's (Click's): help, version,
usage mistakes. What the commands answer is tested through both command lines (the `verify_cli` fixture)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from pokna_verify.cli import main
from pokna_verify.cli.command import command_line


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


ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", ROOT / "verifier" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _shell_lines(text: str) -> list[str]:
    """The lines of every fenced block that is shell, or untagged."""
    lines, language = [], None
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            language = None if language is not None else line.strip().strip("`")
        elif language in {"", "sh", "console", "bash"}:
            lines.append(line.strip())
    return lines


def _documented_invocations() -> list[list[str]]:
    """Every `pokna-verify proof|audit|log ...` line of a shell block in the READMEs and docs/ (the synopses with
    SOURCE and FILE aside), its optional parts (`[--json]`) left out and its comment dropped."""
    return [
        shlex.split(re.sub(r"\s\[[^\]]*\]", "", line), comments=True)[1:]
        for document in DOCUMENTS
        for line in _shell_lines(document.read_text())
        if line.startswith("pokna-verify ") and not re.search(r"\b(SOURCE|FILE)\b", line)
    ]


def test_every_documented_invocation_is_one_the_command_line_accepts() -> None:
    invocations = _documented_invocations()
    assert {argv[0] for argv in invocations} == {"proof", "audit", "log"}, invocations
    parser = command_line()
    for argv in invocations:
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"documented but refused: pokna-verify {' '.join(argv)}")
