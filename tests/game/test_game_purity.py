"""The engine is reused by the offline verifier: it may import only itself and pure standard modules."""

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
            assert module.startswith("pokna_verify.game") or top in ALLOWED_OUTSIDE, (
                f"{source.name} imports {module}"
            )
