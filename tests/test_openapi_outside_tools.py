"""The tools an outside team points at openapi/openapi.json, run as they come (issue 26): Spectral with its
`spectral:oas` ruleset and Redocly with `recommended` find no error; openapi-typescript generates types
(under that same Redocly configuration, which makes it refuse a document with errors); `tsc --strict`
type-checks tests/clients/typescript/play.ts against them; and node runs it, with openapi-fetch, to play
one whole game against a real `pokna serve`.

The npm packages are pinned in tests/clients/typescript/package-lock.json and installed by
`make .venv/.installed-dev` (`npm ci`); nothing is downloaded here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from support.game_play import new_tenant_key
from support.servers import running_server

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "openapi" / "openapi.json"
CLIENT = ROOT / "tests" / "clients" / "typescript"
BIN = CLIENT / "node_modules" / ".bin"
# No telemetry, no update check: the tools talk to nothing but the server under test.
QUIET = {
    "REDOCLY_TELEMETRY": "off",
    "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true",
    "NO_UPDATE_NOTIFIER": "1",
    "NO_COLOR": "1",
}


def _tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.fail(
            f"{path} is missing: run `make .venv/.installed-dev` (npm ci in {CLIENT.relative_to(ROOT)})"
        )
    return str(path)


def _run(
    *command: str, cwd: Path = CLIENT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **QUIET, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_spectral_finds_no_error() -> None:
    linted = _run(
        _tool("spectral"), "lint", "--ruleset", ".spectral.yaml", "--format", "json", "--quiet", str(DOCUMENT)
    )
    results = json.loads(linted.stdout or "[]")
    errors = [
        f"{'.'.join(map(str, result['path']))}: {result['message']}"
        for result in results
        if result["severity"] == 0
    ]
    assert not errors, errors


def test_redocly_recommended_finds_no_error() -> None:
    linted = _run(_tool("redocly"), "lint", "--config", "redocly.yaml", "--format", "json", str(DOCUMENT))
    report = json.loads(linted.stdout)
    errors = [
        f"{problem['ruleId']}: {problem['message']} at {problem['location'][0]['pointer']}"
        for problem in report["problems"]
        if problem["severity"] == "error"
    ]
    assert not errors, errors
    assert linted.returncode == 0, linted.stderr


def _compiled(work: Path) -> Path:
    """play.ts and the types generated for it, type-checked with `tsc --strict` and compiled in `work`."""
    for name in ("play.ts", "tsconfig.json", "package.json", "redocly.yaml"):
        shutil.copy(CLIENT / name, work / name)
    (work / "node_modules").symlink_to(CLIENT / "node_modules", target_is_directory=True)
    generated = _run(_tool("openapi-typescript"), str(DOCUMENT), "--output", "schema.d.ts", cwd=work)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    checked = _run(_tool("tsc"), "--project", "tsconfig.json", cwd=work)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return work / "build" / "play.js"


def test_the_generated_typescript_client_type_checks_and_plays_a_game(
    database_url: str, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    work = tmp_path / "client"
    work.mkdir()
    program = _compiled(work)
    api_key = new_tenant_key(sessions)
    with running_server({"POKNA_DATABASE_URL": database_url}, tmp_path / "data") as base:
        played = _run("node", str(program), cwd=work, env={"POKNA_BASE_URL": base, "POKNA_API_KEY": api_key})
    assert played.returncode == 0, played.stdout + played.stderr
    assert "played: " in played.stdout, played.stdout
