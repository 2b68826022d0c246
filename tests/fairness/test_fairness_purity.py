"""pokna_verify.fairness stays pure: the offline verifier and auditors reuse it with no server and no database."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pokna_verify.fairness

PACKAGE = Path(pokna_verify.fairness.__file__).parent
SOURCES = sorted(PACKAGE.glob("*.py"))
FORBIDDEN_PREFIXES = ("pokna.api", "pokna.db", "pokna.ledger", "pokna.settings", "pokna.cli")
FORBIDDEN_MODULES = {
    "os",
    "io",
    "socket",
    "time",
    "datetime",
    "pathlib",
    "urllib",
    "http",
    "sqlalchemy",
    "random",
}
ALLOWED_POKNA = {"pokna_verify.game.cube"}


def imported_modules(source: Path) -> set[str]:
    tree = ast.parse(source.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: path.name)
def test_imports_nothing_impure(source: Path) -> None:
    for name in imported_modules(source):
        assert not name.startswith(FORBIDDEN_PREFIXES), f"{source.name} imports {name}"
        assert name.split(".")[0] not in FORBIDDEN_MODULES, f"{source.name} imports {name}"
        if name.startswith("pokna.") and not name.startswith(
            ("pokna_verify.fairness", "pokna_verify.game", "pokna_verify.crypto")
        ):
            assert name in ALLOWED_POKNA, f"{source.name} imports {name}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: path.name)
def test_opens_no_files(source: Path) -> None:
    tree = ast.parse(source.read_text())
    calls = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not calls & {"open", "print", "input"}
