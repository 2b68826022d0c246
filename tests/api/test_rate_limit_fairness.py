"""One tenant flooding a real `pokna serve` is throttled while a second tenant keeps its latency.

Timing is compared within one run, never against a fixed number: the second tenant's median latency
while the first floods is held against its own median a moment before, on the same machine."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path

import httpx
import pytest

from pokna.db.engine import make_engine
from pokna.storage import make_sessionmaker
from pokna.tenants import service as tenants
from support.servers import running_server

pytestmark = pytest.mark.postgres_only

FLOODERS = 6
FLOOD_REQUESTS_EACH = 400  # bounded: the flood stops by itself
SAMPLES = 40


def _api_key(database_url: str, name: str) -> str:
    engine = make_engine(database_url)
    try:
        with make_sessionmaker(engine).begin() as session:
            return tenants.issue_api_key(session, tenants.create_tenant(session, name).id).secret
    finally:
        engine.dispose()


def _latencies(http: httpx.Client, path: str, headers: dict[str, str]) -> list[float]:
    seconds = []
    for _ in range(SAMPLES):
        started = time.perf_counter()
        response = http.get(path, headers=headers)
        seconds.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text
    return seconds


def test_a_flooding_tenant_is_throttled_and_the_other_keeps_its_latency(
    database_url: str, tmp_path: Path
) -> None:
    flooder = {"Authorization": f"Bearer {_api_key(database_url, 'Flood')}"}
    steady = {"Authorization": f"Bearer {_api_key(database_url, 'Steady')}"}
    env = {
        "POKNA_DATABASE_URL": database_url,
        "POKNA_RATE_LIMIT_PER_SECOND": "20",
        "POKNA_RATE_LIMIT_BURST": "20",
    }
    flood_statuses: list[int] = []
    lock = threading.Lock()
    with running_server(env, tmp_path / "data") as base, httpx.Client(base_url=base, timeout=30) as http:
        wallet = http.post("/v1/accounts", json={}, headers=steady).json()["id"]
        path = f"/v1/accounts/{wallet}/transactions"
        _latencies(http, path, steady)  # warm up the connection pool and the code paths
        alone = _latencies(http, path, steady)
        stop = threading.Event()

        flooded_wallet = http.post("/v1/accounts", json={}, headers=flooder).json()["id"]

        def flood() -> None:
            """Deposits: each one the database's work (a locked, hash-chained posting) unless refused first."""
            with httpx.Client(base_url=base, timeout=30) as own:
                for _ in range(FLOOD_REQUESTS_EACH):
                    if stop.is_set():
                        return
                    deposit = own.post(
                        f"/v1/accounts/{flooded_wallet}/deposits", json={"amount": 1}, headers=flooder
                    )
                    status = deposit.status_code
                    with lock:
                        flood_statuses.append(status)

        threads = [threading.Thread(target=flood) for _ in range(FLOODERS)]
        for thread in threads:
            thread.start()
        try:
            while len(flood_statuses) < 100 and any(thread.is_alive() for thread in threads):
                time.sleep(0.01)  # the flood is under way and past its burst
            flooded = _latencies(http, path, steady)
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)

    throttled = flood_statuses.count(429)
    print(
        f"steady tenant median {statistics.median(alone) * 1000:.1f} ms alone, "
        f"{statistics.median(flooded) * 1000:.1f} ms during the flood; "
        f"flood: {len(flood_statuses)} requests, {throttled} refused with 429"
    )
    assert set(flood_statuses) <= {201, 429}
    assert throttled > len(flood_statuses) / 2  # most of the flood never reached the database
    assert statistics.median(flooded) < 2 * statistics.median(alone)
