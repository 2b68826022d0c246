"""`pokna tenants`, `pokna ledger` and `pokna audit bundle` reach the database on the async road only
(pokna.cli.command_database: one psycopg connection in a loop of the command's own): none opens an ORM
session, and none connects through a SQLAlchemy engine."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session
from typer.testing import CliRunner

import pokna.cli.ledger  # noqa: F401  (registers `ledger` and `audit`)
from pokna.cli.app import app
from pokna.settings import get_settings

runner = CliRunner()


@pytest.fixture
def cli_env(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("POKNA_DATABASE_URL", database_url)
    monkeypatch.setenv("POKNA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("POKNA_ENV", "test")
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


@contextmanager
def sqlalchemy_use() -> Iterator[list[str]]:
    """What SQLAlchemy is asked for while the block runs: any session's transaction, any engine's
    connection (every session and engine: the listeners are on the classes)."""
    used: list[str] = []

    def session_began(*_: Any) -> None:
        used.append("session")

    def engine_connected(*_: Any) -> None:
        used.append("engine connection")

    hooks = [(Session, "after_begin", session_began), (Engine, "engine_connect", engine_connected)]
    for target, name, hook in hooks:
        event.listen(target, name, hook)
    try:
        yield used
    finally:
        for target, name, hook in hooks:
            event.remove(target, name, hook)


def _ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


def test_the_commands_hold_no_session(cli_env: Path) -> None:
    with sqlalchemy_use() as used:
        created = json.loads(_ok("tenants", "create", "Chalmun's Cantina", "--json"))
        tenant = created["tenant_id"]
        _ok("tenants", "list", "--json")
        second = json.loads(_ok("tenants", "keys", "create", tenant, "--json"))
        _ok("tenants", "keys", "list", tenant)
        _ok("tenants", "keys", "revoke", second["key_id"])
        for export_format in ("jsonl", "csv", "beancount"):
            _ok("ledger", "export", "--tenant", tenant, "--format", export_format)
        _ok("ledger", "reconcile")
        _ok("ledger", "checkpoint", "--tenant", tenant)
        _ok("audit", "bundle", "--tenant", tenant, "-o", str(cli_env / "bundle.jsonl"))
        refused = runner.invoke(app, ["ledger", "reconcile", "--tenant", "ten_nope"])
        assert refused.exit_code == 2, refused.output
    assert used == []
