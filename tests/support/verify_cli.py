"""Both ways into the offline checks, for the tests that run them: the service's `pokna verify` and `pokna
audit verify` (typer's CliRunner) and the verifier's `pokna-verify proof` and `pokna-verify audit`
(`pokna_verify.cli.main`, in this process, as the installed script calls it).

A test asks for the `verify_cli` fixture (tests/conftest.py) and says the command in the service's words,
`verify_cli("verify", PROOF, ...)` or `verify_cli("audit", "verify", FILE, ...)`; the fixture runs it once
through each command line, so every verification test holds for both and neither can drift."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from typing import Protocol

ENTRY_POINTS = ("pokna", "pokna-verify")


@dataclass(frozen=True)
class Ran:
    """What a command said and answered. `output` is both streams, as a terminal shows them."""

    exit_code: int
    stdout: str
    stderr: str
    output: str


class VerifyCli(Protocol):
    @property
    def entry_point(self) -> str: ...

    def __call__(self, *argv: str, input: bytes | str | None = None) -> Ran: ...


def in_verifier_words(argv: Sequence[str]) -> list[str]:
    """`verify ...` is `pokna-verify proof ...`; `audit verify ...` is `pokna-verify audit ...`."""
    if list(argv[:1]) == ["verify"]:
        return ["proof", *argv[1:]]
    if list(argv[:2]) == ["audit", "verify"]:
        return ["audit", *argv[2:]]
    raise ValueError(f"not an offline check of the service's: pokna {' '.join(argv)}")


@dataclass(frozen=True)
class _Pokna:
    entry_point: str = "pokna"

    def __call__(self, *argv: str, input: bytes | str | None = None) -> Ran:
        from typer.testing import CliRunner

        import pokna.cli.ledger
        import pokna.cli.verify  # noqa: F401  (registering `verify` and `audit` on the app)
        from pokna.cli.app import app

        in_verifier_words(argv)  # only the offline checks go through here
        result = CliRunner().invoke(app, list(argv), input=input)
        return Ran(result.exit_code, result.stdout, result.stderr, result.output)


@dataclass(frozen=True)
class _PoknaVerify:
    entry_point: str = "pokna-verify"

    def __call__(self, *argv: str, input: bytes | str | None = None) -> Ran:
        from pokna_verify.cli import main

        given = input.encode() if isinstance(input, str) else input or b""
        stdout, stderr = io.StringIO(), io.StringIO()
        with redirect_stdout(stdout), redirect_stderr(stderr), _stdin(given):
            exit_code = main(in_verifier_words(argv))
        return Ran(exit_code, stdout.getvalue(), stderr.getvalue(), stdout.getvalue() + stderr.getvalue())


@contextmanager
def _stdin(data: bytes) -> Iterator[None]:
    was = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    try:
        yield
    finally:
        sys.stdin = was


def entry_point(name: str) -> VerifyCli:
    entry_points: dict[str, VerifyCli] = {"pokna": _Pokna(), "pokna-verify": _PoknaVerify()}
    return entry_points[name]
