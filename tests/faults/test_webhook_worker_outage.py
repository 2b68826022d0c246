"""The webhook worker outlives its database: PostgreSQL stopped under a running `pokna webhooks deliver`
for a few seconds, the worker says so once, backs off, goes on when the database is back, and every event
is delivered (an attempt sent during the outage is recorded afterwards, not sent again)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from pokna.app import create_app
from pokna.db import migrate
from pokna.db.engine import make_engine
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from support.fault_servers import durable_primary
from support.game_play import Api, play
from support.postgres import Cluster
from support.sessions import make_sessionmaker
from support.tenant_api import new_tenant
from support.webhook_receiver import running_receiver
from support.webhook_worker import FAST, recorded_events, worker_process

pytestmark = pytest.mark.xdist_group("faults")
__all__ = ["durable_primary"]  # the fixture

GAME_EVENTS = ["game.created", "game.turn", "game.started", "game.settled", "game.cancelled"]


def test_the_worker_waits_out_a_stopped_database_and_delivers_everything(
    durable_primary: Cluster, tmp_path: Path
) -> None:
    url = durable_primary.url
    migrate.upgrade(url)
    settings = Settings(env=Environment.TEST, data_dir=tmp_path / "data", database_url=url, **FAST)
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    try:
        with (
            TestClient(create_app(settings, Runtime.from_settings(settings))) as client,
            running_receiver() as receiver,
        ):
            # The worker is still sending when the database stops: from its third request on, the receiver
            # answers once the database is stopped. (A pause of 50 ms before each answer left the worker a few
            # seconds of work after its third request: with the stop 5 s late, as on a loaded machine, the
            # worker finished first and met no outage.)
            receiver.held_from = 2
            tenant = new_tenant(client, sessions)
            created = tenant.post("/v1/webhooks/endpoints", {"url": receiver.url, "event_types": GAME_EVENTS})
            assert created.status_code == 201, created.text
            api = Api(tenant.client, tenant.api_key)
            for _ in range(4):
                play([api], api.create_game(api.wallet(100), [api.wallet(100), api.wallet(100)], stake=5))
            recorded = [e for e in recorded_events(sessions, tenant.tenant_id) if e["type"] in GAME_EVENTS]
            assert len(recorded) > 20

            environment = {
                "POKNA_ENV": "test",
                "POKNA_DATA_DIR": str(settings.data_dir),
                "POKNA_DATABASE_URL": url,
                **{f"POKNA_{name.upper()}": str(value) for name, value in FAST.items()},
            }
            log = tmp_path / "worker.log"
            options = ("--drain", "--poll-seconds", "0.01", "--max-seconds", "120")
            with worker_process(environment, log, *options) as worker:
                deadline = time.monotonic() + 60
                while receiver.arrivals < 3:
                    assert time.monotonic() < deadline, log.read_text()
                    assert worker.poll() is None, log.read_text()
                    time.sleep(0.01)
                durable_primary.halt("fast")
                receiver.released.set()
                time.sleep(3)
                assert worker.poll() is None, (
                    f"the worker exited while the database was away:\n{log.read_text()}"
                )
                durable_primary.restart()
                assert worker.wait(timeout=150) == 0, log.read_text()
            receiver.wait_idle()
            output = log.read_text()
            report = json.loads(output.strip().splitlines()[-1])
            delivered = [request.message_id for request in receiver.delivered()]
            assert sorted(delivered) == sorted(event["id"] for event in recorded)
            assert report["outages"] >= 1
            assert report["delivered"] == len(recorded)
            assert output.count("database unavailable") == report["outages"]  # one line per outage
            assert "database back after" in output
            print(f"\nworker through a stopped database: {report}, {len(receiver.requests())} requests")
    finally:
        engine.dispose()
