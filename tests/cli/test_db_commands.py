from __future__ import annotations

from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from pokna.cli.app import app
from pokna.db import migrate
from pokna.settings import get_settings


@pytest.fixture
def cli_env(empty_database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("POKNA_DATABASE_URL", empty_database_url)
    get_settings.cache_clear()
    yield empty_database_url
    get_settings.cache_clear()


def test_db_upgrade_then_current_reports_head(cli_env: str) -> None:
    runner = CliRunner()
    before = runner.invoke(app, ["db", "current"])
    assert before.exit_code == 0
    assert before.output.startswith("empty")
    upgraded = runner.invoke(app, ["db", "upgrade"])
    assert upgraded.exit_code == 0, upgraded.output
    after = runner.invoke(app, ["db", "current"])
    assert after.output.strip() == f"{migrate.head_revision()} (head)"
    downgraded = runner.invoke(app, ["db", "downgrade", "base"])
    assert downgraded.exit_code == 0, downgraded.output
    assert runner.invoke(app, ["db", "current"]).output.startswith("empty")
