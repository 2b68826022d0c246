"""pokna_verify.tlog is shared by the service (the sequencer, the read API) and `pokna-verify` (a witness,
a player's check): no I/O, no clock, no randomness and nothing of Pokna but its canonical JSON, so both
compute the same."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pokna_verify.tlog

PACKAGE = Path(pokna_verify.tlog.__file__).parent
SOURCES = sorted(PACKAGE.glob("*.py"))
ALLOWED = {
    "__future__",
    "base64",
    "binascii",
    "collections",
    "cryptography",
    "dataclasses",
    "enum",
    "hashlib",
    "hmac",
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


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: path.name)
def test_imports_only_itself_the_standard_library_and_cryptography(source: Path) -> None:
    for module in imported_modules(source):
        top = module.split(".")[0]
        assert module.startswith(("pokna_verify.tlog", "pokna_verify.crypto")) or top in ALLOWED, (
            f"{source.name} imports {module}"
        )
