"""Running the webhooks worker in a test, and reading the outbox it works from."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.webhook import WebhookEvent
from pokna.db.types import utc_now
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from pokna.webhooks.dispatch import dispatch_events
from pokna.webhooks.service import DeliveryPolicy, WorkerReport, run_worker

# Settings for webhook tests: a backoff in milliseconds, so retries happen at once. The timeout is what a
# receiver on this machine may take to answer: at 0.5 s, a loaded machine could make a healthy answer late,
# an extra attempt that tests counting attempts exactly would fail on. A `slow` receiver answers only
# after the sender hangs up (support.webhook_receiver), so a longer timeout costs only the tests of it.
FAST: dict[str, Any] = {
    "webhook_timeout_seconds": 2.0,
    "webhook_backoff_initial_seconds": 0.001,
    "webhook_backoff_max_seconds": 0.01,
    "webhook_attempt_limit": 6,
}


@pytest.fixture(name="settings")
def fast_webhook_settings(tmp_path: Path, database_url: str) -> Settings:
    """Replaces the suite's `settings` (so `runtime` and `client` use it) in a module that imports it."""
    return Settings(env=Environment.TEST, data_dir=tmp_path / "data", database_url=database_url, **FAST)


def drain(runtime: Runtime, seconds: float = 60.0) -> WorkerReport:
    """Run the worker in this process until the outbox has nothing left to send (bounded in time)."""
    deadline = time.monotonic() + seconds
    worker = run_worker(
        runtime.aio,
        runtime.keys.seed_key,
        DeliveryPolicy.from_settings(runtime.settings),
        poll_seconds=0.005,
        drain=True,
        should_stop=lambda: time.monotonic() > deadline,
    )
    return asyncio.run(worker)


def fan_out(runtime: Runtime) -> int:
    """The worker's first step alone: the outbox's events become their deliveries (how many events)."""

    async def step() -> int:
        async with runtime.aio.connection() as connection:
            return await dispatch_events(
                connection, DeliveryPolicy.from_settings(runtime.settings), utc_now()
            )

    return asyncio.run(step())


def recorded_events(sessions: sessionmaker[Session], tenant_id: str | None = None) -> list[dict[str, Any]]:
    """The outbox as written, in order: id, type and ordering key of each event."""
    with sessions() as session:
        query = select(WebhookEvent).order_by(WebhookEvent.seq)
        if tenant_id is not None:
            query = query.where(WebhookEvent.tenant_id == tenant_id)
        return [
            {"id": row.id, "type": row.type, "key": row.ordering_key, "tenant_id": row.tenant_id}
            for row in session.scalars(query)
        ]


@contextmanager
def worker_process(env: dict[str, str], log: Path, *options: str) -> Iterator[subprocess.Popen[bytes]]:
    """`pokna webhooks deliver --json` as a real process with `env` over this one's (it needs the service's
    data dir, whose seed key opens the endpoints' secrets, and its database); killed at the end if alive."""
    command = [str(Path(sys.executable).with_name("pokna")), "webhooks", "deliver", "--json", *options]
    with log.open("wb") as output:
        process = subprocess.Popen(command, env={**os.environ, **env}, stdout=output, stderr=output)
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)
