"""`pokna log sequence` and `pokna sweep` append finished games with the configured origin and the
service's key: the commands an operator runs (docs/operations.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from pokna.cli.app import app
from pokna.runtime import Runtime
from pokna.settings import Settings, get_settings
from pokna_verify.tlog.note import NoteVerifier, open_note
from support.game_logs import checkpoint_notes, logged_leaves, open_table

ORIGIN = "casino.example/pokna/games"


@pytest.fixture
def cli_env(settings: Settings, database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("POKNA_DATABASE_URL", database_url)
    monkeypatch.setenv("POKNA_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("POKNA_ENV", "test")
    monkeypatch.setenv("POKNA_PUBLIC_LOG_ORIGIN", ORIGIN)
    get_settings.cache_clear()
    yield settings.data_dir
    get_settings.cache_clear()


def test_log_sequence_once_and_the_sweep_log_finished_games(
    cli_env: Path, client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    table = open_table(client, sessions)
    table.finish_games(2)
    done = CliRunner().invoke(app, ["log", "sequence", "--once", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == {"games_logged": 2}
    table.finish_games(1)
    swept = CliRunner().invoke(app, ["sweep", "--json"])
    assert swept.exit_code == 0, swept.output
    assert json.loads(swept.stdout)["games_logged"] == 1
    assert len(logged_leaves(sessions, table.tenant_id)) == 3
    origin = f"{ORIGIN}/{table.tenant_id}"
    verifier = NoteVerifier(origin, runtime.keys.signing_key.public_key())
    for note in checkpoint_notes(sessions, table.tenant_id).values():
        assert open_note(note, [verifier]).text.startswith(origin + "\n")


def test_a_running_sequencer_stops_by_itself_after_max_seconds(cli_env: Path) -> None:
    done = CliRunner().invoke(app, ["log", "sequence", "--max-seconds", "0.3", "--interval", "0.1", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == {"games_logged": 0}


@pytest.mark.parametrize(
    "origin",
    # A control character passed the pattern (\s is whitespace only), and every pass that had a game to
    # log failed signing its note; a BOM or a bidi override signed under an origin no one sees as typed.
    [
        "has space/x",
        "a+b",
        "trailing/",
        "con\x01trol/games",
        "\ufeffbom.example/games",
        "rtl\u202e.example/g",
    ],
)
def test_an_origin_witnesses_could_not_pin_is_refused(
    cli_env: Path, origin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POKNA_PUBLIC_LOG_ORIGIN", origin)
    get_settings.cache_clear()
    done = CliRunner().invoke(app, ["log", "sequence", "--once"])
    assert done.exit_code != 0
    assert "POKNA_PUBLIC_LOG_ORIGIN" in done.output


def test_a_sequencer_on_a_database_without_the_schema_stops_with_one_line(
    empty_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `pokna webhooks deliver` does with a database it never reached: it logged a traceback a second
    and, stopped, exited 0 saying "0 finished game(s) added", a worker that could never work."""
    monkeypatch.setenv("POKNA_DATABASE_URL", empty_database_url)
    monkeypatch.setenv("POKNA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("POKNA_ENV", "test")
    get_settings.cache_clear()
    done = CliRunner().invoke(app, ["log", "sequence", "--max-seconds", "3", "--interval", "0.1"])
    get_settings.cache_clear()
    assert done.exit_code == 1, done.output
    assert "has no Pokna schema (run `pokna db upgrade`)" in done.stderr
    assert "Traceback" not in done.output
