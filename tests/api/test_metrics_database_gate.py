"""The database gate on `/metrics`: its places, the requests waiting in its queue, each wait and each wait
that ended in a 503, as Prometheus reads them (prometheus-client's own parser). The queue alert of
deploy/prometheus/ is written against these."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from pokna.api import metrics
from pokna.api.database_gate import DatabaseGate
from pokna.app import create_app
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from support.scrapes import grew, scrape, value

WAIT_SECONDS = 1


@pytest.fixture(autouse=True)
def every_scrape_rendered_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "SCRAPE_REUSE_SECONDS", 0.0, raising=False)


@pytest.fixture
def gated(tmp_path: Path, database_url: str, engine: Engine) -> Iterator[TestClient]:
    """The app with a one-second gate, so that a request that finds every place taken is a 503 soon."""
    settings = Settings(
        env=Environment.TEST,
        data_dir=tmp_path / "data",
        database_url=database_url,
        database_pool_timeout_seconds=WAIT_SECONDS,
    )
    with TestClient(create_app(settings, Runtime.from_settings(settings))) as client:
        yield client


def test_the_gate_s_places_queue_and_waits_are_exposed_and_move(gated: TestClient) -> None:
    gate: DatabaseGate = gated.app.state.database_gate  # type: ignore[attr-defined]
    before = scrape(gated)
    assert value(before, "pokna_db_gate_places") == gate.places  # this process's one live gate: the last made
    holders = [f"holder-{number}".encode() for number in range(gate.places)]
    for holder in holders:  # every place taken, as by long requests of as many clients
        gated.portal.call(gate.enter, holder)  # type: ignore[union-attr]

    answers: list[int] = []
    unknown_key = {"Authorization": "Bearer pk_not_a_key"}  # authenticating it needs the database
    waiting = threading.Thread(
        target=lambda: answers.append(gated.get("/v1/accounts/acct_x", headers=unknown_key).status_code)
    )
    waiting.start()
    deadline = time.monotonic() + 10
    while grew(before, during := scrape(gated), "pokna_db_gate_waiting_requests") < 1:
        assert time.monotonic() < deadline, "the request never queued"
        time.sleep(0.05)
    waiting.join(timeout=30)
    after_timeout = scrape(gated)

    assert grew(before, during, "pokna_db_gate_waiting_requests") == 1
    assert answers == [503]
    assert grew(before, after_timeout, "pokna_db_gate_waiting_requests") == 0
    assert grew(before, after_timeout, "pokna_db_gate_timeouts_total") == 1
    # Every entry is one wait: the holders' (none: a place was free) and the one that ran out.
    assert grew(before, after_timeout, "pokna_db_gate_wait_seconds_count") == gate.places + 1
    assert grew(before, after_timeout, "pokna_db_gate_wait_seconds_bucket", le="0.001") == gate.places
    assert grew(before, after_timeout, "pokna_db_gate_wait_seconds_bucket", le="0.5") == gate.places
    assert grew(before, after_timeout, "pokna_db_gate_wait_seconds_sum") >= WAIT_SECONDS

    for holder in holders:
        gated.portal.call(gate.leave, holder)  # type: ignore[union-attr]
    assert gated.get("/v1/accounts/acct_x", headers=unknown_key).status_code == 401
    after = scrape(gated)
    assert (
        grew(after_timeout, after, "pokna_db_gate_wait_seconds_bucket", le="0.001") == 1
    )  # a place was free
    assert grew(after_timeout, after, "pokna_db_gate_timeouts_total") == 0
