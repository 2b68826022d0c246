"""A burst of concurrent clients against a real `pokna serve` on the embedded default, shared by the test
that holds it to its answers (tests/test_embedded_load.py) and the bench that times it
(bench/embedded_burst.py)."""

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

CLIENTS = 64
TENANTS = 8
REQUESTS_PER_CLIENT = 3  # a keyed deposit, a read of the wallet, the trial balance
POKNA = str(Path(sys.executable).with_name("pokna"))


def _new_key(data_dir: Path, name: str) -> str:
    env = {**os.environ, "POKNA_DATA_DIR": str(data_dir), "POKNA_DATABASE_URL": ""}
    created = subprocess.run(
        [POKNA, "tenants", "create", name, "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert created.returncode == 0, created.stderr
    key: str = json.loads(created.stdout)["api_key"]
    return key


def burst(base: str, keys: list[str], wallets: list[str], attempt: int) -> list[tuple[int, float]]:
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


def opened_wallets(base: str, data_dir: Path) -> tuple[list[str], list[str]]:
    """TENANTS tenants made by the CLI beside the server (no URL: the same embedded cluster), a wallet each,
    and the server's pool warmed (a server that has been up a while, not one whose database just started)."""
    keys = [_new_key(data_dir, f"tenant {index}") for index in range(TENANTS)]
    wallets = []
    with httpx.Client(base_url=base, timeout=30) as http:
        for key in keys:
            opened = http.post("/v1/accounts", json={}, headers={"Authorization": f"Bearer {key}"})
            assert opened.status_code == 201, opened.text
            wallets.append(opened.json()["id"])
    with ThreadPoolExecutor(16) as pool:
        warm = list(pool.map(lambda _: httpx.get(f"{base}/readyz", timeout=30).status_code, range(64)))
    assert set(warm) == {200}
    return keys, wallets


def percentiles(answers: list[tuple[int, float]]) -> dict[str, float]:
    times = sorted(seconds for _, seconds in answers)
    return {"median": times[len(times) // 2], "p90": times[len(times) * 9 // 10], "slowest": times[-1]}
