"""`/metrics` scraped as Prometheus would, parsed with prometheus-client's own parser; the counters must
match the requests this test made (as differences between two scrapes: the registry is the process's)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from pokna.api import metrics
from pokna.db.models import JournalTransaction
from pokna.runtime import Runtime
from support.api_checks import assert_problem
from support.scrapes import LOOPBACK, grew, samples_of, scrape, value
from support.servers import running_server
from support.tenant_api import TenantApi, new_tenant

REQUESTS = "pokna_http_request_duration_seconds_count"
SCRAPE_REUSE = 1.1  # a server's rendering is answered again for a second (api.metrics.SCRAPE_REUSE_SECONDS)


@pytest.fixture(autouse=True)
def every_scrape_rendered_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests compare two scrapes a moment apart: the second must not be the first one's rendering."""
    monkeypatch.setattr(metrics, "SCRAPE_REUSE_SECONDS", 0.0, raising=False)


def test_requests_are_counted_by_route_template_and_status(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = new_tenant(client, sessions)
    wallets = [api.wallet() for _ in range(2)]
    before = scrape(client)
    for _ in range(3):
        assert client.get("/healthz").status_code == 200
    for wallet in wallets:
        assert api.get(f"/v1/accounts/{wallet}").status_code == 200
    assert api.get("/v1/accounts/acct_nobody").status_code == 404
    assert client.get("/no/such/path/42").status_code == 404
    after = scrape(client)

    assert grew(before, after, REQUESTS, method="GET", route="/healthz", status="200") == 3
    account = "/v1/accounts/{account_id}"
    assert grew(before, after, REQUESTS, method="GET", route=account, status="200") == 2
    assert grew(before, after, REQUESTS, method="GET", route=account, status="404") == 1
    assert grew(before, after, REQUESTS, method="GET", route="unmatched", status="404") == 1
    assert (
        grew(before, after, REQUESTS, method="GET", route="/metrics", status="200") == 1
    )  # the first scrape
    routes = {dict(labels).get("route") for name, labels in after if name == REQUESTS}
    assert not any(wallet in str(routes) for wallet in wallets), routes  # ids never become label values


def _journal_transactions(sessions: sessionmaker[Session]) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(JournalTransaction)) or 0


def _next_action(game: dict[str, Any]) -> dict[str, Any]:
    account = game["turn"]["account_ids"][0]
    allowed = game["turn"]["allowed_actions"]
    for kind in ("start", "claim", "roll"):
        if kind in allowed:
            return {"type": kind, "account_id": account}
    return {"type": "vote", "account_id": account, "choice": "split"}


def _play(api: TenantApi, game: dict[str, Any], actions: Counter[str]) -> dict[str, Any]:
    for _ in range(200):
        if game["status"] in ("settled", "cancelled"):
            return game
        action = _next_action(game)
        response = api.post(f"/v1/games/{game['id']}/actions", action)
        assert response.status_code == 200, response.text
        actions[action["type"]] += 1
        game = response.json()
    raise AssertionError("the game did not end")


def test_game_actions_games_postings_and_replays_are_counted(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = new_tenant(client, sessions)
    before = scrape(client)
    journal_before = _journal_transactions(sessions)
    vigo, lando, han = (api.wallet(100) for _ in range(3))
    actions: Counter[str] = Counter()
    created = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": [lando, han], "stake": 5})
    settled = _play(api, created.json(), actions)

    doomed = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": [lando, han], "stake": 5})
    cancel = {"type": "cancel"}
    keyed = {"headers": {"Idempotency-Key": "cancel-once"}}
    path = f"/v1/games/{doomed.json()['id']}/actions"
    assert api.post(path, cancel, **keyed).status_code == 200
    replayed = api.post(path, cancel, **keyed)
    assert replayed.headers["Idempotent-Replayed"] == "true"
    refused = api.post(path, {"type": "start", "account_id": vigo})
    assert refused.status_code == 409, refused.text
    after = scrape(client)

    for action_type, times in actions.items():
        assert grew(before, after, "pokna_game_actions_total", type=action_type, result="ok") == times
    assert grew(before, after, "pokna_game_actions_total", type="cancel", result="ok") == 1  # not the replay
    code = refused.json()["code"]
    assert grew(before, after, "pokna_game_actions_total", type="start", result=code) == 1
    route = "/v1/games/{game_id}/actions"
    assert grew(before, after, "pokna_idempotent_replays_total", route=route) == 1
    outcome = settled["outcome"]["reason"]
    assert grew(before, after, "pokna_games_finished_total", outcome=outcome) == 1
    assert grew(before, after, "pokna_games_finished_total", outcome="cancelled") == 1
    posted = _journal_transactions(sessions) - journal_before
    assert posted > 3  # three deposits and the game's money
    assert grew(before, after, "pokna_ledger_transactions_posted_total") == posted
    assert grew(before, after, "pokna_ledger_post_duration_seconds_count") >= 3


def test_the_pool_gauge_follows_checked_out_connections(client: TestClient, runtime: Runtime) -> None:
    """The requests' pool (psycopg's, in the app's loop), not a SQLAlchemy engine no request uses."""
    gauge = "pokna_db_connections_checked_out"
    idle = value(scrape(client), gauge)
    assert client.portal is not None
    taken = [client.portal.wrap_async_context_manager(runtime.aio.connection()) for _ in range(2)]
    with taken[0], taken[1]:
        assert value(scrape(client), gauge) == idle + 2
    assert value(scrape(client), gauge) == idle


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=10) as response:
        status: int = response.status
        return status


def _requests_by_process(directory: Path, route: str) -> dict[str, float]:
    """Each worker's own count, read from its files alone (prometheus-client names them by pid)."""
    counts: dict[str, float] = {}
    for histogram in directory.glob("histogram_*.db"):
        pid = histogram.stem.removeprefix("histogram_")
        with tempfile.TemporaryDirectory() as alone:
            shutil.copy(histogram, alone)
            registry = CollectorRegistry()
            MultiProcessCollector(registry, path=alone)  # type: ignore[no-untyped-call]
            for family in registry.collect():
                for sample in family.samples:
                    if sample.name == REQUESTS and sample.labels.get("route") == route:
                        counts[pid] = counts.get(pid, 0.0) + sample.value
    return counts


def _counted(directory: Path, route: str, requests: int) -> dict[str, float]:
    """`_requests_by_process` once every answered request is counted: a worker counts a request when its
    answer has been sent, so the client may read the files a moment before the last count lands."""
    deadline = time.monotonic() + 10
    while True:
        counts = _requests_by_process(directory, route)
        if sum(counts.values()) >= requests or time.monotonic() > deadline:
            return counts
        time.sleep(0.05)


def _stop(pid: int) -> None:
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


def _gate_places_once_two_workers_live(base: str) -> float:
    """The gate's places once they reach two workers' worth: a stopped worker's replacement may still be
    starting when the requests are counted."""
    deadline = time.monotonic() + 30
    while True:
        time.sleep(SCRAPE_REUSE)
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
            places = value(samples_of(response.read().decode()), "pokna_db_gate_places")
        if places >= 2 * 15 or time.monotonic() > deadline:
            return places


def test_two_workers_count_every_request_once(tmp_path: Path, database_url: str) -> None:
    """Linux hands a shared socket's connections to whichever worker wakes first, often the same one; so
    once one worker has answered a batch it is stopped (uvicorn starts another in its place) and the next
    batch is answered by a second process. Every scrape, whichever worker answers it, then counts each
    request once, the stopped worker's included."""
    directory = tmp_path / "prometheus"
    environment = {"POKNA_DATABASE_URL": database_url, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    requests = 0
    with running_server(environment, tmp_path / "data", "--workers", "2") as base:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with ThreadPoolExecutor(max_workers=8) as pool:
                statuses = list(pool.map(_get, [f"{base}/readyz"] * 16))
            assert statuses == [200] * 16
            requests += 16
            by_process = _counted(directory, "/readyz", requests)
            if len(by_process) >= 2:
                break
            _stop(int(next(iter(by_process))))
        scrapes = []
        for _ in range(6):  # each on a new connection, answered by either worker
            with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
                scrapes.append(samples_of(response.read().decode()))
        places = _gate_places_once_two_workers_live(base)
    # The live gauges add up the live workers' gates, 15 places each (the pool's 5 and 10 of overflow): the
    # stopped worker's went with it (45 if they had stayed), its replacement's came.
    assert places == 2 * 15
    assert len(by_process) >= 2, by_process  # two processes answered some of them
    assert all(count > 0 for count in by_process.values()), by_process
    assert sum(by_process.values()) == requests
    for samples in scrapes:
        assert value(samples, REQUESTS, method="GET", route="/readyz", status="200") == requests


def test_metrics_answer_only_the_allowed_addresses(client: TestClient) -> None:
    """Not public (issue 28, F4): loopback by default, by the connection's address."""
    problem = assert_problem(client.get("/metrics"), 403, "forbidden")  # "testclient" is no address
    assert "POKNA_METRICS_ALLOWED_NETWORKS" in problem["detail"]
    assert_problem(TestClient(client.app, client=("10.1.2.3", 5)).get("/metrics"), 403, "forbidden")
    for allowed in (LOOPBACK, ("127.0.0.2", 5), ("::1", 5), ("::ffff:127.0.0.1", 5)):
        assert TestClient(client.app, client=allowed).get("/metrics").status_code == 200, allowed


def test_invented_methods_count_as_one_label(client: TestClient) -> None:
    """960 anonymous requests with invented methods grew the exposition from 32 KB to 2 MB."""
    before = scrape(client)
    for number in range(40):
        client.request(f"PROBE{number}", "/healthz")
    after = scrape(client)
    methods = {dict(labels).get("method") for name, labels in after if name == REQUESTS}
    assert methods <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"}, methods
    assert grew(before, after, REQUESTS, method="other", route="/healthz", status="405") == 40


def test_a_scrape_is_rendered_at_most_once_a_second(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(metrics, "SCRAPE_REUSE_SECONDS", 60.0, raising=False)
    scraper = TestClient(client.app, client=LOOPBACK)
    first = scraper.get("/metrics").content
    for _ in range(5):
        assert client.get("/healthz").status_code == 200
    assert scraper.get("/metrics").content == first  # the requests between are counted at the next rendering
