"""A burst of more requests than the pool has connections queues at the database gate instead of failing,
and another tenant's reads keep their pace meanwhile (issue 28, F2), on a real `pokna serve`.

Before the gate, 100 concurrent GETs from one key filled anyio's 40 threads with checkouts waiting for one
of the pool's 15 connections while the requests holding them waited for a thread: 40 of them answered
503 `database_unavailable` once the pool's wait ran out, and another tenant's read on that worker waited
as long. Timing is compared within one run: the other tenant's median during the bursts against its own
median a moment before."""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from pokna.api.database_gate import DatabaseGate
from pokna.errors import DatabaseUnavailable
from support.servers import running_server
from support.tenant_api import api_key_on

BURST = 100
MAX_BURSTS = 8  # bounded: bursts until the steady tenant has enough samples taken during them
SAMPLES = 30
IDLE_SAMPLES = 10
POOL_TIMEOUT_SECONDS = 5


BURST_CLIENT = """
import asyncio, json, sys
import httpx

async def all_at_once(base, path, authorization, count):
    print("go", flush=True)
    limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
        responses = await asyncio.gather(
            *(http.get(path, headers={"Authorization": authorization}) for _ in range(count))
        )
    print(json.dumps([response.status_code for response in responses]))

asyncio.run(all_at_once(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""
"""A process of its own, so that parsing the burst's answers does not slow the steady tenant's client."""


def _burst(base: str, path: str, headers: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", BURST_CLIENT, base, path, headers["Authorization"], str(BURST)],
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_burst_queues_and_another_tenant_keeps_its_pace(database_url: str, tmp_path: Path) -> None:
    bursting = {"Authorization": f"Bearer {api_key_on(database_url, 'Burst')}"}
    steady = {"Authorization": f"Bearer {api_key_on(database_url, 'Steady')}"}
    env = {
        "POKNA_DATABASE_URL": database_url,
        # The bursts stay inside the key's rate limit, as in the finding (100 of a burst of 200): the limit
        # is raised only so that several bursts in a row are too.
        "POKNA_RATE_LIMIT_BURST": str((BURST + 1) * (MAX_BURSTS + 2)),
        # Without the gate the checkouts waiting for a connection gave up after this (10 s by default).
        "POKNA_DATABASE_POOL_TIMEOUT_SECONDS": str(POOL_TIMEOUT_SECONDS),
    }
    statuses: list[int] = []
    with running_server(env, tmp_path / "data") as base, httpx.Client(base_url=base, timeout=60) as http:
        paths = {}
        for name, headers in (("burst", bursting), ("steady", steady)):
            wallet = http.post("/v1/accounts", json={}, headers=headers).json()["id"]
            paths[name] = f"/v1/accounts/{wallet}/transactions"

        def steady_read() -> float:
            started = time.perf_counter()
            response = http.get(paths["steady"], headers=steady)
            assert response.status_code == 200, response.text
            return time.perf_counter() - started

        for _ in range(10):  # warm up the connection pool and the code paths
            steady_read()
        alone, during = _measure(base, paths, bursting, steady_read, statuses)
    ratio = statistics.median(during) / statistics.median(alone)
    print(
        f"steady tenant median {statistics.median(alone) * 1000:.1f} ms alone, "
        f"{statistics.median(during) * 1000:.1f} ms during the bursts ({len(during)} samples, {ratio:.2f}x, "
        f"slowest {max(during) * 1000:.0f} ms); bursts: {len(statuses)} requests, {statuses.count(503)} x 503"
    )
    assert statuses.count(503) == 0
    assert set(statuses) == {200}
    assert len(during) >= 5  # the steady tenant was served while bursts were under way
    # Without the gate the steady tenant's read waited out the pool's checkout (10.2 s in the finding) and
    # the bursts answered 503. How much slower it is during a burst is a figure, not a bound, on this shared
    # 2-core machine (1.5-1.9x measured alone, 2.1-2.2x beside the suite's other worker): the ratio is printed.
    assert max(during) < POOL_TIMEOUT_SECONDS


def _measure(
    base: str,
    paths: dict[str, str],
    bursting: dict[str, str],
    steady_read: Callable[[], float],
    statuses: list[int],
) -> tuple[list[float], list[float]]:
    """The steady tenant's read times alone and during bursts, alternating; each burst's statuses kept."""
    alone: list[float] = []
    during: list[float] = []
    for round_number in range(MAX_BURSTS):
        # Idle and loaded samples alternate, so that a change in the machine's other load (it is shared)
        # weighs on both alike.
        alone += [steady_read() for _ in range(IDLE_SAMPLES)]
        burst = _burst(base, paths["burst"], bursting)
        assert burst.stdout is not None
        assert burst.stdout.readline() == "go\n"  # the client has started and sends now
        while burst.poll() is None:
            seconds = steady_read()
            if burst.poll() is None:  # only a read the burst overlapped from start to end counts
                during.append(seconds)
        output, _ = burst.communicate(timeout=60)
        statuses.extend(json.loads(output))
        if round_number >= 2 and len(during) >= SAMPLES:
            break
    return alone, during


def test_the_gate_takes_parties_in_turn_and_bounds_the_wait() -> None:
    """One party's queue does not go before another's: the places go round robin between parties."""

    async def scenario() -> list[str]:
        gate = DatabaseGate(places=1, wait_seconds=5)
        order: list[str] = []
        await gate.enter(b"a")

        async def request(party: bytes, name: str) -> None:
            await gate.enter(party)
            order.append(name)
            gate.leave(party)

        waiting = [asyncio.create_task(request(b"a", f"a{n}")) for n in range(3)]
        await asyncio.sleep(0)
        waiting.append(asyncio.create_task(request(b"b", "b0")))
        await asyncio.sleep(0)
        gate.leave(b"a")
        await asyncio.gather(*waiting)

        await gate.enter(b"a")
        gate.wait_seconds = 0.05
        with pytest.raises(DatabaseUnavailable):
            await gate.enter(b"b")
        gate.leave(b"a")
        await gate.enter(b"b")  # the place was not lost to the request that gave up
        return order

    assert asyncio.run(scenario()) == ["a0", "b0", "a1", "a2"]


def test_no_party_holds_more_than_half_the_places() -> None:
    """So another party's request finds a place free at once, however long the first party's take."""

    async def scenario() -> None:
        gate = DatabaseGate(places=4, wait_seconds=0.05)
        await gate.enter(b"a")
        await gate.enter(b"a")
        with pytest.raises(DatabaseUnavailable):
            await gate.enter(b"a")  # over its share, though two places are free
        await gate.enter(b"b")  # at once
        third = asyncio.create_task(gate.enter(b"a"))
        await asyncio.sleep(0)
        gate.leave(b"a")  # its own place comes back to it
        gate.wait_seconds = 5
        await third

    asyncio.run(scenario())


def test_a_wait_that_runs_out_is_logged_as_the_runbook_says(caplog: pytest.LogCaptureFixture) -> None:
    """Issue 46, L6: a request that waited its turn and got its 503 logged nothing, while the runbook
    (docs/operations.md, PoknaServiceUnavailable) tells the operator that the `database unavailable: ...`
    lines name the cause."""

    async def scenario() -> None:
        gate = DatabaseGate(places=1, wait_seconds=0.05)
        await gate.enter(b"a")
        with pytest.raises(DatabaseUnavailable) as refused:
            await gate.enter(b"b")
        assert "nothing was committed" in refused.value.detail

    with caplog.at_level(logging.WARNING, "pokna.api"):
        asyncio.run(scenario())
    [line] = [record.getMessage() for record in caplog.records if record.name == "pokna.api"]
    assert line.startswith("database unavailable: no database connection came free within 0.05 s"), line
    assert "database gate: its 1 place held by requests still running" in line, line
