"""pokna_verify.crypto is shared by fairness and the ledger, so it must be as pure as fairness: no I/O, no clock, no
randomness, and nothing else of Pokna (tests/fairness/test_fairness_purity.py lets fairness import it)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pokna_verify.crypto

PACKAGE = Path(pokna_verify.crypto.__file__).parent
SOURCES = sorted(PACKAGE.glob("*.py"))
ALLOWED_OUTSIDE = {
    "__future__",
    "base64",
    "binascii",
    "collections",
    "hashlib",
    "json",
    "math",
    "re",
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


def test_the_package_has_its_modules() -> None:
    assert {path.name for path in SOURCES} >= {"canonical_json.py", "signing.py", "encoding.py", "errors.py"}


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: path.name)
def test_imports_only_itself_the_standard_library_and_cryptography(source: Path) -> None:
    for module in imported_modules(source):
        top = module.split(".")[0]
        assert module.startswith("pokna_verify.crypto") or top == "cryptography" or top in ALLOWED_OUTSIDE, (
            f"{source.name} imports {module}"
        )
