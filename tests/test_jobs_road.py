"""The background jobs are on the one road to the database (issue 43): `pokna sweep`, `pokna webhooks
deliver`, `pokna log sequence` and the monitoring reads of `/readyz` and `/metrics` take no SQLAlchemy
connection (no session, no engine of their own) and hand no work to a thread: every statement goes
through psycopg's async pool (pokna.db.aio), in the job's own event loop (watched as support.detours
says). The one thread is not on the database's road: a webhook attempt's DNS lookup, which runs the
system's resolver off the loop, bounded by the webhook timeout (pokna.webhooks.addresses)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from pokna.api import metrics, metrics_backlog
from pokna.cli.app import app as pokna_cli
from pokna.db.models.game import Game
from pokna.db.types import utc_now
from pokna.settings import Settings, get_settings
from support.detours import watched
from support.scrapes import scrape, value
from support.tenant_api import new_tenant
from support.webhook_receiver import running_receiver

DNS_LOOKUP = "pokna.webhooks.addresses.allowed_addresses_within.<locals>.look_up"


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch, settings: Settings, database_url: str) -> Iterator[CliRunner]:
    """The commands in this process, on the test's database and the service's data directory (its keys)."""
    monkeypatch.setenv("POKNA_DATABASE_URL", database_url)
    monkeypatch.setenv("POKNA_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("POKNA_ENV", "test")
    get_settings.cache_clear()
    yield CliRunner()
    get_settings.cache_clear()


def _ran(runner: CliRunner, *argv: str) -> dict[str, Any]:
    result = runner.invoke(pokna_cli, [*argv, "--json"])
    assert result.exit_code == 0, result.output
    answer: dict[str, Any] = json.loads(result.output.splitlines()[-1])
    return answer


def test_the_jobs_take_no_session_and_no_thread(
    client: TestClient,
    sessions: sessionmaker[Session],
    commands: CliRunner,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(metrics_backlog, "BACKLOG_REUSE_SECONDS", 0.0, raising=False)
    monkeypatch.setattr(metrics, "SCRAPE_REUSE_SECONDS", 0.0, raising=False)
    api = new_tenant(client, sessions)
    with running_receiver() as receiver:
        subscribed = api.post(
            "/v1/webhooks/endpoints", {"url": receiver.url, "event_types": ["game.created"]}
        )
        assert subscribed.status_code == 201, subscribed.text
        vigo, lando = api.wallet(100), api.wallet(100)
        created = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": [lando], "stake": 5})
        assert created.status_code == 201, created.text
        with sessions.begin() as session:  # never started, its start deadline passed: the sweep cancels it
            session.execute(
                update(Game)
                .where(Game.id == created.json()["id"])
                .values(turn_deadline_at=utc_now() - timedelta(seconds=90))
            )

        with watched(monkeypatch) as detours:
            swept = _ran(commands, "sweep")
            delivered = _ran(commands, "webhooks", "deliver", "--drain", "--poll-seconds", "0.01")
            logged = _ran(commands, "log", "sequence", "--once")
            ready = client.get("/readyz")
            scraped = scrape(client)

    assert (swept["games"], swept["timeouts"], swept["checkpoints_taken"]) == (1, 1, 1)
    assert swept["games_logged"] == 1  # the cancelled game, by the sweep's pass of the sequencer
    assert delivered["delivered"] == 1
    assert receiver.arrivals == 1
    assert logged == {"games_logged": 0}
    assert ready.status_code == 200, ready.text
    assert value(scraped, "pokna_backlog_up") == 1
    assert detours.threads == [DNS_LOOKUP]  # the one delivery's lookup of its receiver, and nothing else
    assert detours.checkouts == 0
