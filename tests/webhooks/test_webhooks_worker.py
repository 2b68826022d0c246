"""`pokna webhooks deliver` as real processes: a worker killed with SIGKILL in the middle
of an attempt and another started after it lose nothing (the receiver sees the interrupted message again,
with the same `webhook-id`), and two workers at once never send one delivery concurrently."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.settings import Settings
from support.game_play import Api, play
from support.tenant_api import TenantApi, new_tenant
from support.webhook_receiver import Receiver, running_receiver
from support.webhook_worker import FAST, fast_webhook_settings, recorded_events, worker_process

__all__ = ["fast_webhook_settings"]  # the `settings` fixture of this module: retries in milliseconds

GAME_EVENTS = [
    "game.created",
    "game.turn",
    "game.started",
    "game.turn_timed_out",
    "game.settled",
    "game.cancelled",
]
LIMIT_SECONDS = 90


@contextmanager
def worker(
    settings: Settings, log: Path, *options: str, timeout_seconds: float | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    fast = FAST if timeout_seconds is None else FAST | {"webhook_timeout_seconds": timeout_seconds}
    environment = {
        "POKNA_ENV": "test",
        "POKNA_DATA_DIR": str(settings.data_dir),  # the same seed key: it opens the endpoints' secrets
        "POKNA_DATABASE_URL": str(settings.database_url),
        **{f"POKNA_{name.upper()}": str(value) for name, value in fast.items()},
    }
    options = ("--poll-seconds", "0.01", "--max-seconds", str(LIMIT_SECONDS), *options)
    with worker_process(environment, log, *options) as process:
        yield process


def finished(process: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    """The worker's report, once it has drained the outbox and exited."""
    assert process.wait(timeout=LIMIT_SECONDS + 30) == 0, log.read_text()
    report: dict[str, Any] = json.loads(log.read_text().strip().splitlines()[-1])
    return report


def play_games(tenant: TenantApi, count: int) -> None:
    api = Api(tenant.client, tenant.api_key)
    for _ in range(count):
        play([api], api.create_game(api.wallet(100), [api.wallet(100), api.wallet(100)], stake=5))


def subscribe(tenant: TenantApi, receiver: Receiver) -> str:
    created = tenant.post("/v1/webhooks/endpoints", {"url": receiver.url, "event_types": GAME_EVENTS})
    assert created.status_code == 201, created.text
    endpoint_id: str = created.json()["id"]
    return endpoint_id


def assert_in_order_per_game(arrived: list[str], recorded: list[dict[str, Any]]) -> None:
    """Games run side by side, so only each game's own messages keep the outbox's order."""
    for game_key in {event["key"] for event in recorded}:
        in_game = [event["id"] for event in recorded if event["key"] == game_key]
        assert [message for message in arrived if message in in_game] == in_game


def wait_until(condition: Any, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true in time"
        time.sleep(0.02)


def test_a_worker_killed_mid_attempt_loses_nothing_and_the_retry_has_the_same_id(
    client: TestClient, sessions: sessionmaker[Session], settings: Settings, tmp_path: Path
) -> None:
    tenant = new_tenant(client, sessions)
    with running_receiver(fail_first=1, failure="hold") as receiver:
        endpoint_id = subscribe(tenant, receiver)
        play_games(tenant, 2)
        recorded = [
            event for event in recorded_events(sessions, tenant.tenant_id) if event["type"] in GAME_EVENTS
        ]

        with worker(settings, tmp_path / "first.log") as first:
            wait_until(lambda: receiver.arrivals == 1)  # the first attempt is held open by the receiver
            os.kill(first.pid, signal.SIGKILL)
            assert first.wait(timeout=30) == -signal.SIGKILL
        receiver.released.set()
        with worker(settings, tmp_path / "second.log", "--drain") as second:
            report = finished(second, tmp_path / "second.log")
        receiver.wait_idle()

        delivered = [request.message_id for request in receiver.delivered()]
        assert sorted(delivered) == sorted(event["id"] for event in recorded)
        assert_in_order_per_game(delivered, recorded)
        held, *rest = receiver.requests()
        assert held.answered is None
        assert [request.message_id for request in rest].count(held.message_id) == 1  # sent again, same id
        assert len(rest) == len(recorded)
        assert report["delivered"] == len(recorded)
    deliveries = tenant.get(f"/v1/webhooks/endpoints/{endpoint_id}/deliveries", params={"limit": 100}).json()
    attempts = {delivery["message_id"]: delivery["attempts"] for delivery in deliveries["data"]}
    assert attempts.pop(held.message_id) == 2
    assert set(attempts.values()) == {1}
    print(
        f"\nkill -9: {len(recorded)} events, {len(receiver.requests())} requests received, second worker {report}"
    )


def test_two_workers_at_once_never_send_one_delivery_concurrently(
    client: TestClient, sessions: sessionmaker[Session], settings: Settings, tmp_path: Path
) -> None:
    tenant = new_tenant(client, sessions)
    with running_receiver(fail_first=6) as receiver:
        receiver.answer_after_seconds = 0.02
        # Both workers send: one started a second late (a loaded machine) found the outbox drained and sent
        # nothing. The first request waits for the other's (the senders wait up to 60 s for it to answer).
        receiver.first_waits_for_another = True
        subscribe(tenant, receiver)
        play_games(tenant, 4)
        recorded = [
            event for event in recorded_events(sessions, tenant.tenant_id) if event["type"] in GAME_EVENTS
        ]

        logs = (tmp_path / "a.log", tmp_path / "b.log")
        with (
            worker(settings, logs[0], "--drain", timeout_seconds=60) as one,
            worker(settings, logs[1], "--drain", timeout_seconds=60) as other,
        ):
            reports = [finished(one, logs[0]), finished(other, logs[1])]
        receiver.wait_idle()

        assert receiver.overlaps == []
        answered_ok = [r.message_id for r in receiver.requests() if r.answered == 200]
        assert sorted(answered_ok) == sorted(event["id"] for event in recorded)  # each exactly once
        assert_in_order_per_game(answered_ok, recorded)
        assert sum(report["attempts"] for report in reports) == len(recorded) + 6
        assert all(report["attempts"] > 0 for report in reports), reports
    print(f"\ntwo workers: {len(recorded)} events, reports {reports}")
