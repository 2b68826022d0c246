"""Backing up and restoring PostgreSQL as docs/operations.md says: `pg_dump -Fc`, `pg_restore` into a new
database, then the restored books export byte for byte the same, pass `pokna audit verify` against the
checkpoint signed before the dump, and the service serves the restored games (their proofs verify) and
keeps posting on the restored chain."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url
from typer.testing import CliRunner, Result

import pokna.cli  # noqa: F401  (registers every command)
from pokna.app import create_app
from pokna.cli.app import app
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings, get_settings
from support.databases import PostgresDatabases
from support.driver import new_api_key
from support.game_play import Api, play, verify
from support.postgres import find_bindir

runner = CliRunner()
TOOL_TIMEOUT_SECONDS = 120


@pytest.fixture
def restored_url(postgres_databases: PostgresDatabases) -> Iterator[str]:
    """A new, empty database (what `createdb` makes) to restore into."""
    url = postgres_databases.empty()
    yield url
    postgres_databases.drop(url)


@pytest.fixture(autouse=True)
def clean_settings() -> Iterator[None]:
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _pg_tool(tool: str, url: str, *args: str) -> None:
    parts = make_url(url)
    argv = [
        str(find_bindir() / tool),
        f"--host={parts.host}",
        f"--port={parts.port}",
        f"--username={parts.username}",
        f"--dbname={parts.database}",
        *args,
    ]
    result = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_SECONDS,
        check=False,
        env={**os.environ, "PGCONNECT_TIMEOUT": "10"},
    )
    assert result.returncode == 0, f"{tool}: {result.stderr}"


def _pokna(monkeypatch: pytest.MonkeyPatch, data_dir: Path, database_url: str, *args: str) -> Result:
    monkeypatch.setenv("POKNA_ENV", "test")
    monkeypatch.setenv("POKNA_DATA_DIR", str(data_dir))
    monkeypatch.setenv("POKNA_DATABASE_URL", database_url)
    get_settings.cache_clear()
    result = runner.invoke(app, list(args))
    get_settings.cache_clear()
    return result


def _serve(data_dir: Path, database_url: str) -> TestClient:
    settings = Settings(env=Environment.TEST, data_dir=data_dir, database_url=database_url)
    return TestClient(create_app(settings, Runtime.from_settings(settings)))


def test_a_dump_restored_into_a_new_database_keeps_the_books_and_the_proofs(
    tmp_path: Path, database_url: str, restored_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    issued = new_api_key(database_url, "Chalmun's Cantina")
    api_key = issued.secret

    # Play a few games and move money.
    with _serve(data_dir, database_url) as client:
        api = Api(client, api_key)
        vigo, han, greedo = api.wallet(500), api.wallet(200), api.wallet(200)
        games = [play([api], api.create_game(vigo, [han, greedo], stake=stake)) for stake in (5, 7, 3)]
        api.ok(api.withdraw(han, 11), 201)
        before_games = {game["id"]: api.game(game["id"]) for game in games}
        balances = {account: api.balance(account) for account in (vigo, han, greedo)}
        ring = api.key_ring()

    checkpoint = _pokna(
        monkeypatch, data_dir, database_url, "ledger", "checkpoint", "--tenant", issued.tenant_id
    )
    assert checkpoint.exit_code == 0, checkpoint.output
    (tmp_path / "checkpoint.json").write_text(checkpoint.stdout)
    current = ring.current
    assert current is not None
    (tmp_path / "signer.key").write_text(current.to_json()["public_key"])
    audit = ["--checkpoint", str(tmp_path / "checkpoint.json"), "--public-key", str(tmp_path / "signer.key")]

    before = tmp_path / "before.jsonl"
    exported = _pokna(
        monkeypatch,
        data_dir,
        database_url,
        "ledger",
        "export",
        "--tenant",
        issued.tenant_id,
        "-o",
        str(before),
    )
    assert exported.exit_code == 0, exported.output
    assert before.read_bytes().count(b"\n") > 10
    original_audit = _pokna(monkeypatch, data_dir, database_url, "audit", "verify", str(before), *audit)
    assert original_audit.exit_code == 0, original_audit.output

    # Back up, restore into a new database.
    dump = tmp_path / "pokna.dump"
    _pg_tool("pg_dump", database_url, "-Fc", f"--file={dump}")
    _pg_tool("pg_restore", restored_url, "--no-owner", "--exit-on-error", str(dump))

    after = tmp_path / "after.jsonl"
    exported = _pokna(
        monkeypatch,
        data_dir,
        restored_url,
        "ledger",
        "export",
        "--tenant",
        issued.tenant_id,
        "-o",
        str(after),
    )
    assert exported.exit_code == 0, exported.output
    assert after.read_bytes() == before.read_bytes()
    restored_audit = _pokna(monkeypatch, data_dir, restored_url, "audit", "verify", str(after), *audit)
    assert restored_audit.exit_code == 0, restored_audit.output
    assert "checkpoint     checked" in restored_audit.output
    reconciled = _pokna(
        monkeypatch, data_dir, restored_url, "ledger", "reconcile", "--tenant", issued.tenant_id
    )
    assert reconciled.exit_code == 0, reconciled.output

    # The service on the restored database: same games, proofs that verify, and it keeps posting.
    with _serve(data_dir, restored_url) as client:
        api = Api(client, api_key)
        for game_id, game in before_games.items():
            assert api.game(game_id) == game
            assert verify(api.proof(game_id), api.key_ring(), receipt=game["fairness"]["commitment"]).valid
        assert {account: api.balance(account) for account in balances} == balances
        later = play([api], api.create_game(vigo, [han], stake=2))
        assert verify(api.proof(later["id"]), api.key_ring(), receipt=later["fairness"]["commitment"]).valid
        assert api.trial_balance_total() == 0

    grown = tmp_path / "grown.jsonl"
    exported = _pokna(
        monkeypatch,
        data_dir,
        restored_url,
        "ledger",
        "export",
        "--tenant",
        issued.tenant_id,
        "-o",
        str(grown),
    )
    assert exported.exit_code == 0, exported.output
    # Each chain's history before the dump is, byte for byte, where its grown chain starts.
    before_chains, grown_chains = _by_chain(before), _by_chain(grown)
    assert all(grown_chains.get(chain, [])[: len(lines)] == lines for chain, lines in before_chains.items())
    assert sum(map(len, grown_chains.values())) > sum(map(len, before_chains.values()))
    grown_audit = _pokna(monkeypatch, data_dir, restored_url, "audit", "verify", str(grown), *audit)
    assert grown_audit.exit_code == 0, grown_audit.output


def _by_chain(export: Path) -> dict[int, list[bytes]]:
    """An export's lines (as bytes), by chain, in their order."""
    chains: dict[int, list[bytes]] = {}
    for line in export.read_bytes().splitlines(keepends=True):
        chains.setdefault(json.loads(line)["chain"], []).append(line)
    return chains
