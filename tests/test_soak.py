"""A bounded soak: a real `pokna serve --workers 2` on PostgreSQL, more clients than its connection pools
hold, moving money and playing games for a minute. Throughput must not fall off, the API processes' memory
must not run away, and nothing may fail; the figures are printed (bench/README.md records a run).

`POKNA_SOAK_SECONDS` makes it longer for a manual run; the default keeps `make test` bounded."""

from __future__ import annotations

import os
import random
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.orm import Session, sessionmaker

from support.game_play import Api, new_tenant_key, obliging, play
from support.servers import serving

SOAK_SECONDS = float(os.environ.get("POKNA_SOAK_SECONDS", "60"))
WORKERS = 2
POOL_PER_WORKER = 5 + 10  # POKNA_DATABASE_POOL_SIZE and _OVERFLOW's defaults: the gate's places
CLIENTS = WORKERS * POOL_PER_WORKER + 10
TENANTS = 4


@dataclass
class Record:
    """Every request's end (monotonic), duration and status, from every client."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[tuple[float, float, int]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, ended: float, seconds: float, status: int) -> None:
        with self.lock:
            self.requests.append((ended, seconds, status))


class TimedHttp:
    """An httpx client that writes each request's latency and status down."""

    def __init__(self, base: str, record: Record) -> None:
        self.client = httpx.Client(base_url=base, timeout=60)
        self.record = record

    def _timed(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        started = time.monotonic()
        response = self.client.request(method, url, **kwargs)
        ended = time.monotonic()
        self.record.add(ended, ended - started, response.status_code)
        return response

    def get(self, url: str, *, params: dict[str, Any] | None, headers: dict[str, str]) -> httpx.Response:
        return self._timed("GET", url, params=params, headers=headers)

    def post(self, url: str, *, json: Any, headers: dict[str, str]) -> httpx.Response:
        return self._timed("POST", url, json=json, headers=headers)


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def _api_processes(server_pid: int) -> list[int]:
    """The supervisor and its children: the workers (and multiprocessing's resource tracker)."""
    children = Path(f"/proc/{server_pid}/task/{server_pid}/children").read_text().split()
    return [server_pid, *map(int, children)]


def _client(api: Api, number: int, stop: threading.Event, record: Record) -> None:
    """One integrating app's loop: deposits and withdrawals under keys, reads, and a game every third turn."""
    rng = random.Random(number)
    try:
        vigo, player = api.wallet(1_000_000), api.wallet(1_000_000)
        turn = 0
        while not stop.is_set():
            turn += 1
            api.ok(
                api.post(f"/v1/accounts/{vigo}/deposits", {"amount": 7}, idempotency_key=f"d{number}-{turn}"),
                201,
            )
            api.ok(
                api.post(
                    f"/v1/accounts/{player}/withdrawals", {"amount": 3}, idempotency_key=f"w{number}-{turn}"
                ),
                201,
            )
            api.balance(rng.choice((vigo, player)))
            api.ok(api.get(f"/v1/accounts/{vigo}/transactions", limit=5))
            if turn % 3 == 0:
                play([api], api.create_game(vigo, [player], stake=rng.randint(1, 20)), obliging)
    except BaseException as error:  # a failed client is a finding, reported below
        with record.lock:
            record.failures.append(f"client {number}: {error!r}")


def _percentile(sorted_seconds: list[float], fraction: float) -> float:
    return sorted_seconds[min(len(sorted_seconds) - 1, int(fraction * len(sorted_seconds)))]


def test_soak_more_clients_than_connections_stays_flat(
    database_url: str, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    keys = [new_tenant_key(sessions, f"Soak {number}") for number in range(TENANTS)]
    env = {"POKNA_DATABASE_URL": database_url, "POKNA_RATE_LIMIT_PER_SECOND": "0"}
    record = Record()
    stop = threading.Event()
    with serving(env, tmp_path / "data", "--workers", str(WORKERS)) as server:
        https = [TimedHttp(server.base, record) for _ in range(CLIENTS)]
        warm = Api(https[0], keys[0])
        for _ in range(20):  # both workers answer something before memory is measured
            warm.trial_balance_total()
        processes = _api_processes(server.process.pid)
        assert len(processes) >= 1 + WORKERS  # and multiprocessing's resource tracker
        rss_start = {pid: _rss_kib(pid) for pid in processes}
        clients = [
            threading.Thread(target=_client, args=(Api(http, keys[number % TENANTS]), number, stop, record))
            for number, http in enumerate(https)
        ]
        started = time.monotonic()
        for client in clients:
            client.start()
        try:
            stop.wait(SOAK_SECONDS)
        finally:
            stop.set()
            for client in clients:
                client.join(timeout=120)
        ended = time.monotonic()
        rss_end = {pid: _rss_kib(pid) for pid in processes}
        for http in https:
            http.client.close()

    assert not [client for client in clients if client.is_alive()]
    window = [(at, seconds, status) for at, seconds, status in record.requests if started <= at <= ended]
    third = (ended - started) / 3
    per_third = [
        sum(1 for at, _, _ in window if started + index * third <= at < started + (index + 1) * third)
        for index in range(3)
    ]
    statuses = sorted({status for _, _, status in window})
    latencies = sorted(seconds for _, seconds, _ in window)
    print(
        f"\nsoak: {CLIENTS} clients ({TENANTS} tenants), {WORKERS} workers with {POOL_PER_WORKER} connections each, "
        f"{ended - started:.0f} s: {len(window)} requests, statuses {statuses}\n"
        f"  throughput by thirds: {', '.join(f'{count / third:.1f}/s' for count in per_third)}\n"
        f"  latency: p50 {statistics.median(latencies) * 1000:.0f} ms, p90 {_percentile(latencies, 0.9) * 1000:.0f} ms, "
        f"p99 {_percentile(latencies, 0.99) * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms\n"
        f"  RSS KiB start -> end: "
        + ", ".join(f"{pid}: {rss_start[pid]} -> {rss_end[pid]}" for pid in processes)
    )
    assert not record.failures, record.failures[:5]
    assert not [status for _, _, status in window if status >= 500]
    assert all(200 <= status < 300 for status in statuses), statuses
    assert min(per_third) > 0
    # Throughput held. It used to fall over the minute (last third / first 0.47-0.59): plans a connection made
    # while the tables were nearly empty, and kept, read the tenant's whole journal or accounts on each call
    # until autovacuum first analyzed the tables, up to a minute on. `pokna serve` now analyzes a table as
    # soon as it holds rows (pokna.db.first_statistics), which replans them by key within the first seconds
    # (bench/README.md, "The soak's decline": 0.59-1.39 since). Not tighter: on a shared machine the
    # neighbours' load alone has taken a third to 0.59 of the first while the CPU per request stayed flat.
    assert per_third[2] >= 0.5 * per_third[0], per_third
    for pid in processes:  # generous: a leak of the request rate would show well past this
        assert rss_end[pid] < 2 * rss_start[pid] + 50 * 1024, (pid, rss_start[pid], rss_end[pid])
