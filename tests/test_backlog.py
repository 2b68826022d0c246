"""The backlog gauges of `/metrics` (pokna.backlog, pokna.api.metrics_backlog), scraped as Prometheus
would and parsed with prometheus-client's own parser: each follows what the database holds, and moves back
when the sweeper and the webhooks worker do their work. The alerts of deploy/prometheus/ are written
against them. A beacon-mode roll past its deadline, and the wallets it holds: tests/dealer/test_dealer_beacon_mode.py.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from pokna.api import metrics, metrics_backlog
from pokna.app import create_app
from pokna.db import migrate
from pokna.db.models.game import Game
from pokna.db.models.webhook import WebhookDelivery
from pokna.db.types import utc_now
from pokna.dealer.action.locked import Clock
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from support.postgres import start_cluster
from support.scrapes import Samples, scrape, value
from support.sweeping import swept
from support.tenant_api import new_tenant
from support.webhook_worker import fan_out

GAUGES = (
    "pokna_game_deadlines_overdue",
    "pokna_game_deadline_overdue_seconds",
    "pokna_beacon_rolls_overdue",
    "pokna_beacon_roll_overdue_seconds",
    "pokna_wallets_held_by_overdue_rolls",
    "pokna_ledger_unsigned_seconds",
)
GAME_EVENTS = ["game.created", "game.turn", "game.cancelled"]


@pytest.fixture(autouse=True)
def every_scrape_read_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "SCRAPE_REUSE_SECONDS", 0.0, raising=False)
    monkeypatch.setattr(metrics_backlog, "BACKLOG_REUSE_SECONDS", 0.0, raising=False)


def _webhooks(samples: Samples, stage: str) -> tuple[float, float]:
    return (
        value(samples, "pokna_webhook_backlog", stage=stage),
        value(samples, "pokna_webhook_backlog_oldest_seconds", stage=stage),
    )


@pytest.mark.citus  # on Citus each read asks every shard: it must plan there too
def test_overdue_deadlines_unsigned_history_and_webhook_work_are_exposed_and_move(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, settings: Settings
) -> None:
    fresh = scrape(client)
    assert value(fresh, "pokna_backlog_up") == 1
    assert all((name, frozenset()) in fresh for name in GAUGES), sorted(name for name, _ in fresh)
    assert [value(fresh, name) for name in GAUGES] == [0] * len(GAUGES)
    assert _webhooks(fresh, "fan_out") == _webhooks(fresh, "delivery") == (0, 0)

    api = new_tenant(client, sessions)
    subscribed = api.post(
        "/v1/webhooks/endpoints", {"url": "http://127.0.0.1:9/hook", "event_types": GAME_EVENTS}
    )
    assert subscribed.status_code == 201, subscribed.text
    vigo, lando, han = (api.wallet(100) for _ in range(3))  # three deposits, not signed yet
    created = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": [lando, han], "stake": 5})
    assert created.status_code == 201, created.text
    with sessions.begin() as session:  # as if no sweeper had run since its start deadline, 90 s ago
        session.execute(
            update(Game)
            .where(Game.id == created.json()["id"])
            .values(turn_deadline_at=utc_now() - timedelta(seconds=90))
        )
    late = scrape(client)
    assert value(late, "pokna_game_deadlines_overdue") == 1
    assert 90 <= value(late, "pokna_game_deadline_overdue_seconds") < 150
    assert value(late, "pokna_beacon_rolls_overdue") == 0  # a game in the default mode waits for no round
    assert value(late, "pokna_ledger_unsigned_seconds") > 0
    events, oldest_event = _webhooks(late, "fan_out")
    assert events >= 4
    assert oldest_event > 0
    assert _webhooks(late, "delivery") == (0, 0)

    report = swept(runtime, Clock(now=utc_now(), open_game_ttl=timedelta(minutes=10)))
    assert report.timeouts == 1
    assert report.checkpoints_taken == 1
    after_sweep = scrape(client)
    assert (
        value(after_sweep, "pokna_game_deadlines_overdue")
        == value(after_sweep, "pokna_game_deadline_overdue_seconds")
        == 0
    )
    assert value(after_sweep, "pokna_ledger_unsigned_seconds") == 0  # every moved head signed

    fan_out(runtime)
    with sessions.begin() as session:
        # The game's three deliveries, one after the other: only the first is work a worker may do now.
        session.execute(update(WebhookDelivery).values(next_attempt_at=utc_now() - timedelta(seconds=120)))
    fanned = scrape(client)
    assert _webhooks(fanned, "fan_out") == (0, 0)
    deliveries, oldest_delivery = _webhooks(fanned, "delivery")
    assert deliveries == 1
    assert 120 <= oldest_delivery < 180

    with sessions.begin() as session:  # the receiver is down: each delivery waits out its backoff
        session.execute(update(WebhookDelivery).values(next_attempt_at=utc_now() + timedelta(hours=1)))
    assert _webhooks(scrape(client), "delivery") == (0, 0)  # no work due: the worker is not late


def test_a_database_out_of_reach_leaves_the_backlog_gauges_out_not_the_scrape(tmp_path: Path) -> None:
    settings = Settings(
        env=Environment.TEST,
        data_dir=tmp_path / "data",
        database_url="postgresql+psycopg://pokna@127.0.0.1:1/pokna",  # nothing listens on port 1
        database_connect_timeout_seconds=1,
    )
    with TestClient(create_app(settings)) as client:
        samples = scrape(client)
    assert value(samples, "pokna_backlog_up") == 0
    assert not [name for name, _ in samples if name in GAUGES or name.startswith("pokna_webhook_backlog")]
    assert ("pokna_db_gate_places", frozenset()) in samples  # the process's own metrics still answer


def test_a_database_outage_is_one_warning_line_and_its_end_one_info_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 46, L6: each worker logged the read's whole traceback (~8 KB) at every read while the database
    was down. Now an outage is one line when the reads start failing, and one when they succeed again."""
    cluster = start_cluster()
    try:
        migrate.upgrade(cluster.url)
        settings = Settings(
            env=Environment.TEST,
            data_dir=tmp_path / "data",
            database_url=cluster.url,
            database_connect_timeout_seconds=1,
        )
        with TestClient(create_app(settings)) as client, caplog.at_level(logging.INFO, "pokna.api"):
            assert value(scrape(client), "pokna_backlog_up") == 1
            for outage in range(2):
                cluster.halt()
                for _ in range(3):
                    assert value(scrape(client), "pokna_backlog_up") == 0
                cluster.restart()
                assert value(scrape(client), "pokna_backlog_up") == 1
                assert value(scrape(client), "pokna_backlog_up") == 1
                said = [r for r in caplog.records if r.name == "pokna.api" and "backlog" in r.getMessage()]
                assert [r.levelno for r in said] == [logging.WARNING, logging.INFO] * (outage + 1), said
                assert all(r.exc_info is None and "\n" not in r.getMessage() for r in said)
                assert "cannot reach the database" in said[-2].getMessage()
    finally:
        cluster.stop()
