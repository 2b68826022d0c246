"""The zero-setup default holds a burst: 64 concurrent clients, reads and keyed writes, against a real
`pokna serve` on the embedded PostgreSQL. The SQLite default answered most of such a burst with 503 after
~10 s; this one must answer every request, none with 503 or 500, each within 2 s, and apply every keyed
write exactly once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from support.servers import serving

pytestmark = pytest.mark.xdist_group("embedded")

CLIENTS = 64
TENANTS = 8
REQUESTS_PER_CLIENT = 3  # a keyed deposit, a read of the wallet, the trial balance
ATTEMPTS = 2
POKNA = str(Path(sys.executable).with_name("pokna"))


def _new_key(data_dir: Path, name: str) -> str:
    env = {**os.environ, "POKNA_DATA_DIR": str(data_dir), "POKNA_DATABASE_URL": ""}
    created = subprocess.run(
        [POKNA, "tenants", "create", name, "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert created.returncode == 0, created.stderr
    key: str = json.loads(created.stdout)["api_key"]
    return key


def _burst(base: str, keys: list[str], wallets: list[str], attempt: int) -> list[tuple[int, float]]:
    """Every client starts at once and sends its requests one after another: (status, seconds) of each."""
    answers: list[tuple[int, float]] = []
    lock = threading.Lock()
    start = threading.Barrier(CLIENTS)

    def client(number: int) -> None:
        key, wallet = keys[number % TENANTS], wallets[number % TENANTS]
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=base, timeout=30) as http:
            start.wait()
            for request in range(REQUESTS_PER_CLIENT):
                began = time.monotonic()
                if request == 0:
                    response = http.post(
                        f"/v1/accounts/{wallet}/deposits",
                        json={"amount": 1},
                        headers={**headers, "Idempotency-Key": f"burst-{attempt}-{number}"},
                    )
                elif request == 1:
                    response = http.get(f"/v1/accounts/{wallet}", headers=headers)
                else:
                    response = http.get("/v1/ledger/trial-balance", headers=headers)
                with lock:
                    answers.append((response.status_code, time.monotonic() - began))

    threads = [threading.Thread(target=client, args=(number,)) for number in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    return answers


def test_64_clients_on_the_embedded_default_get_every_answer_within_2_seconds(cluster_home: Path) -> None:
    data_dir = cluster_home / ".pokna"
    with serving({"POKNA_DATABASE_URL": ""}, data_dir) as server:
        keys = [_new_key(data_dir, f"tenant {index}") for index in range(TENANTS)]
        wallets = []
        with httpx.Client(base_url=server.base, timeout=30) as http:
            for key in keys:
                opened = http.post("/v1/accounts", json={}, headers={"Authorization": f"Bearer {key}"})
                assert opened.status_code == 201, opened.text
                wallets.append(opened.json()["id"])
        # A server that has been up a while: its pooled connections are open (the burst measures serving,
        # not the first connections to a database that just started).
        with ThreadPoolExecutor(16) as pool:
            warm = list(
                pool.map(lambda n: httpx.get(f"{server.base}/readyz", timeout=30).status_code, range(64))
            )
        assert set(warm) == {200}

        # Every burst must be answered in full without a 503 or a 500. The 2 s bound is wall-clock on a
        # shared 2-core machine (the suite's other worker runs beside this test): a second burst may stand
        # in for a first that another process slowed.
        slowest_of_each: list[float] = []
        for attempt in range(ATTEMPTS):
            answers = _burst(server.base, keys, wallets, attempt)
            statuses = sorted({status for status, _ in answers})
            times = sorted(seconds for _, seconds in answers)
            print(
                f"\n{len(answers)} answers from {CLIENTS} clients: statuses {statuses}, median "
                f"{times[len(times) // 2]:.2f} s, p90 {times[len(times) * 9 // 10]:.2f} s, slowest {times[-1]:.2f} s"
            )
            assert len(answers) == CLIENTS * REQUESTS_PER_CLIENT
            assert statuses == [200, 201]
            slowest_of_each.append(times[-1])
            if times[-1] < 2.0:
                break
        assert min(slowest_of_each) < 2.0, slowest_of_each

        with httpx.Client(base_url=server.base, timeout=30) as http:
            for key, wallet in zip(keys, wallets, strict=True):
                balance = http.get(f"/v1/accounts/{wallet}", headers={"Authorization": f"Bearer {key}"})
                # every keyed write of every burst applied exactly once
                assert balance.json()["balance"] == CLIENTS // TENANTS * len(slowest_of_each)
