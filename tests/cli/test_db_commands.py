from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from pokna.cli.app import app
from pokna.db import migrate
from pokna.db.engine import make_engine
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


def test_db_upgrade_behind_a_long_reader_says_why_it_stopped_and_what_to_do(cli_env: str) -> None:
    """docs/operations.md: migration 0025 waits a bounded time for the posting table; the operator is told
    that, and to run the command again once the reader is stopped, which then migrates."""
    runner = CliRunner()
    assert runner.invoke(app, ["db", "upgrade", "0024_game_write_checks"]).exit_code == 0
    engine = make_engine(cli_env)
    try:
        with engine.connect() as reader:  # an export reading the postings, still open
            reader.execute(text("SELECT count(*) FROM posting")).one()
            stopped = runner.invoke(app, ["db", "upgrade"])
            reader.rollback()
        assert stopped.exit_code == 1, stopped.output
        assert "gave up waiting for a table another session is using" in stopped.output
        assert "run `pokna db upgrade` again" in stopped.output
        assert migrate.current_revision(engine) == "0024_game_write_checks"
        again = runner.invoke(app, ["db", "upgrade"])
        assert again.exit_code == 0, again.output
        assert migrate.current_revision(engine) == migrate.head_revision()
    finally:
        engine.dispose()


@pytest.mark.parametrize("command", [["db", "upgrade"], ["db", "downgrade", "-1"], ["tenants", "list"]])
def test_a_schema_a_newer_release_migrated_is_named_as_such(cli_env: str, command: list[str]) -> None:
    """Back on an older release after a newer one migrated the database: `pokna db upgrade` cannot help (it
    was the advice given, and itself answered "Can't locate revision ... give a revision id")."""
    runner = CliRunner()
    assert runner.invoke(app, ["db", "upgrade"]).exit_code == 0
    engine = make_engine(cli_env)
    try:
        with engine.begin() as connection:
            connection.execute(text("UPDATE alembic_version SET version_num = '0099_from_the_future'"))
        if command[0] == "tenants":  # a command that fails on the schema: its table is gone
            with engine.begin() as connection:
                connection.execute(text("ALTER TABLE tenant RENAME TO tenant_renamed"))
    finally:
        engine.dispose()
    refused = runner.invoke(app, command)
    assert refused.exit_code == 1, refused.output
    assert (
        "is at schema 0099_from_the_future, which a newer release of Pokna migrated "
        f"(this release's head is {migrate.head_revision()}): run that release" in refused.stderr
    )
    assert "run `pokna db upgrade`" not in refused.stderr
