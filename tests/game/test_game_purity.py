"""The engine is reused by the offline verifier: it may import only itself, pure standard modules, and the
verifier's checks of states that cannot happen (`pokna_verify.invariant`, itself pure: held below)."""

from __future__ import annotations

import ast
from pathlib import Path

import pokna_verify.game

ALLOWED_OUTSIDE = {
    "__future__",
    "collections",
    "dataclasses",
    "enum",
    "fractions",
    "math",
    "operator",
    "typing",
}
PURE_SIBLINGS = {"pokna_verify.invariant"}


def imported_modules(source: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_game_package_imports_no_io_clock_randomness_or_shell() -> None:
    package = Path(pokna_verify.game.__file__).parent
    sources = sorted(package.glob("*.py"))
    assert len(sources) > 5
    for source in sources:
        for module in imported_modules(source):
            top = module.split(".")[0]
            assert (
                module.startswith("pokna_verify.game") or module in PURE_SIBLINGS or top in ALLOWED_OUTSIDE
            ), f"{source.name} imports {module}"


def test_the_game_package_s_pure_siblings_import_only_pure_standard_modules() -> None:
    for name in PURE_SIBLINGS:
        source = Path(__import__(name, fromlist=["_"]).__file__ or "")
        assert source.is_file()
        for module in imported_modules(source):
            assert module.split(".")[0] in ALLOWED_OUTSIDE, f"{source.name} imports {module}"
