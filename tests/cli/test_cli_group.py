"""The `pokna` command itself: lazy sub-commands, readable help, `--version`."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

import pokna
from pokna.cli.app import COMMANDS, app
from pokna.cli.group import polish

POKNA = Path(sys.executable).with_name("pokna")
HEAVY = ("sqlalchemy", "alembic", "fastapi", "uvicorn", "pydantic", "pydantic_settings", "rich")
SEED = "ab" * 32


def _modules_loaded_by(*argv: str) -> set[str]:
    """Run `pokna argv` in a fresh interpreter and list the top-level packages it imported."""
    script = (
        "import sys\n"
        f"sys.argv = ['pokna', *{list(argv)!r}]\n"
        "from pokna.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert exit.code == 0, exit.code\n"
        "print(' '.join(sorted({name.split('.')[0] for name in sys.modules})), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    return set(done.stderr.split())


@pytest.mark.parametrize(
    "argv",
    [
        ("roll", "--server-seed", SEED, "--client-seed", "c", "--nonce", "0"),
        ("roll", "--server-seed", SEED, "--client-seed", "c", "--nonce", "0", "--json"),
        ("verify", "--help"),
        ("--help",),
        ("--version",),
    ],
)
def test_the_offline_commands_import_no_database_no_server_and_no_pydantic(argv: tuple[str, ...]) -> None:
    loaded = _modules_loaded_by(*argv)
    assert "pokna" in loaded
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_listing_the_commands_imports_none_of_them() -> None:
    script = (
        "import sys\nsys.argv = ['pokna', '--help']\nfrom pokna.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sorted(name for name in sys.modules if name.startswith('pokna.cli.'))), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert set(done.stderr.split()) == {"pokna.cli.app", "pokna.cli.errors", "pokna.cli.group"}


def _built() -> dict[str, typer.core.TyperGroup | typer.core.TyperCommand]:
    for module in {command.module for command in COMMANDS.values()}:
        importlib.import_module(module)
    return dict(typer.main.get_group(app).commands)  # type: ignore[arg-type]


def test_the_table_names_every_command_with_its_own_summary() -> None:
    built = _built()
    assert set(built) == set(COMMANDS)
    for name, command in built.items():
        assert COMMANDS[name].summary == command.get_short_help_str(limit=1000), name


def test_help_has_no_type_labels_and_arguments_by_their_metavar() -> None:
    runner = CliRunner()
    pages: dict[str, str] = {}
    for name, command in _built().items():
        polish(command)
        subcommands: list[str | None] = list(getattr(command, "commands", {})) or [None]
        for sub in subcommands:
            words = [name, sub, "--help"] if sub else [name, "--help"]
            result = runner.invoke(app, words)
            assert result.exit_code == 0, result.output
            pages[" ".join(words)] = result.stdout
    for words_shown, page in pages.items():
        assert not re.search(r"<(bool|str|int|path)>", page), words_shown
        assert "{" not in page.splitlines()[0], words_shown
        assert "╭" not in page, words_shown
    assert pages["verify --help"].startswith("Usage: pokna verify [OPTIONS] SOURCE\n")
    assert "  --public-key PATH " in pages["verify --help"]
    assert "  --json " in pages["verify --help"]
    assert "  --chain / --no-chain  " in pages["ledger reconcile --help"]
    assert pages["db downgrade --help"].startswith("Usage: pokna db downgrade [OPTIONS] REVISION\n")
    assert pages["db upgrade --help"].startswith("Usage: pokna db upgrade [OPTIONS] [REVISION]\n")
    assert "  --nonce INTEGER " in pages["roll --help"]


def test_version_prints_the_installed_version() -> None:
    done = subprocess.run([str(POKNA), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"pokna {version('pokna')}\n", "")
    assert pokna.__version__ == version("pokna")


def test_the_root_help_lists_every_command_in_order() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    listed = [
        line.split()[0] for line in result.stdout.split("Commands:\n")[1].splitlines() if line[:3].strip()
    ]
    assert listed == list(COMMANDS)
    assert "--version" in result.stdout


def test_a_command_still_runs_after_lazy_loading() -> None:
    result = CliRunner().invoke(
        app, ["roll", "--server-seed", SEED, "--client-seed", "c", "--nonce", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["nonce"] == 2
