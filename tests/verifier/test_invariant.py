"""Can't-happen states are checked in every mode: `python -O` strips `assert`, so no code of the service
or the verifier uses one (pokna_verify.invariant's checks instead), and such a check still fails under -O,
as a BrokenInvariant that names what was expected rather than a TypeError further on."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "service").rglob("*.py"), *(ROOT / "verifier").rglob("*.py")])


def test_no_source_of_the_service_or_the_verifier_asserts() -> None:
    found = [
        f"{source.relative_to(ROOT)}:{node.lineno}"
        for source in SOURCES
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assert)
    ]
    assert SOURCES
    assert found == [], found


# The tenant's row read for its default rake, which a deleted tenant (never done: its keys would still
# point at it) would not answer; a cursor that answers no row stands in for that state.
NO_ROW_UNDER_O = """
import asyncio
from pokna.dealer.rake import tenant_defaults

class NoRow:
    async def fetchone(self):
        return None

try:
    asyncio.run(tenant_defaults(NoRow()))
except Exception as error:
    print(type(error).__name__, error)
"""


def test_a_broken_invariant_is_caught_under_python_O() -> None:
    ran = subprocess.run(
        [sys.executable, "-O", "-c", NO_ROW_UNDER_O], capture_output=True, text=True, timeout=60, check=True
    )
    assert ran.stdout.strip() == (
        "BrokenInvariant internal error, a bug: expected the tenant's row (a key's tenant is never deleted)"
    ), ran.stdout + ran.stderr
