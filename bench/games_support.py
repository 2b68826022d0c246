"""What the HTTP game benchmark needs besides the load itself: a migrated throwaway PostgreSQL, the API
served as a real uvicorn process (the baseline app), CPU accounting per process group, and statistics."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "tests"))

from pokna.db import migrate  # noqa: E402

# `mypy bench` alone does not see tests/ as a source root; the full `mypy` run does.
from support.postgres import start_cluster  # type: ignore[import-not-found,unused-ignore]  # noqa: E402
from support.servers import free_port  # type: ignore[import-not-found,unused-ignore]  # noqa: E402


@dataclass(frozen=True)
class Database:
    url: str
    postmaster_pid: int


@contextmanager
def migrated_cluster(extra_options: str = "", *, durable: bool = False) -> Iterator[Database]:
    """A throwaway cluster (fsync off: it is thrown away) at the head revision; removed afterwards.
    `extra_options`: more `-c name=value` server settings (bench/action_cpu.py preloads pg_stat_statements);
    `durable`: every COMMIT waits for its WAL to be written (`synchronous_commit=on`), as production runs, where
    the test harness's clusters commit asynchronously (support.postgres.Cluster.durable)."""
    cluster = start_cluster(extra_options=extra_options, durable=durable)
    try:
        migrate.upgrade(cluster.url)
        postmaster_pid = int((cluster.root / "data" / "postmaster.pid").read_text().split()[0])
        yield Database(cluster.url, postmaster_pid)
    finally:
        cluster.stop()


@dataclass
class Server:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path


@contextmanager
def serving(
    env: dict[str, str],
    workers: int,
    log_path: Path,
    factory: str,
    keep_nagle: bool = False,
) -> Iterator[Server]:
    """`bench/baseline_app.py` (the product app plus one route) under uvicorn, on loopback only; up once
    `/readyz` answers 200."""
    extra = ["--factory", factory, *(["--keep-nagle"] if keep_nagle else [])]
    with _served("baseline_app.py", extra, env, workers, log_path) as server:
        yield server


@contextmanager
def serving_reference(env: dict[str, str], workers: int, log_path: Path) -> Iterator[Server]:
    """`bench/reference_app.py` (the frozen outside reference) under uvicorn, on loopback only."""
    with _served("reference_app.py", [], env, workers, log_path) as server:
        yield server


@contextmanager
def _served(
    script: str, extra: list[str], env: dict[str, str], workers: int, log_path: Path
) -> Iterator[Server]:
    port = free_port()
    environment = {**os.environ, **env}
    argv = [sys.executable, str(BENCH / script), "--port", str(port), "--workers", str(workers), *extra]
    with log_path.open("wb") as log:
        process = subprocess.Popen(argv, env=environment, stdout=log, stderr=log)
        server = Server(f"http://127.0.0.1:{port}", process, log_path)
        try:
            _wait_until_up(server)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)


def _wait_until_up(server: Server) -> None:
    # A loaded machine (other suites beside the bench) can take longer than a minute to start two workers.
    start_seconds = float(os.environ.get("POKNA_BENCH_START_SECONDS", "60"))
    deadline = time.monotonic() + start_seconds
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"the server exited with {server.process.returncode}:\n{server.log_path.read_text()}"
            )
        try:
            with urllib.request.urlopen(f"{server.base_url}/readyz", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    raise RuntimeError(
        f"the server did not answer within {start_seconds:g} s:\n{server.log_path.read_text()}"
    )


# --- CPU accounting --------------------------------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")


def _process_table() -> dict[int, tuple[str, int, float]]:
    """pid -> (command name, parent pid, CPU seconds) for every process we can read: its own user and
    system time, and that of its children that have exited (a PostgreSQL backend whose client
    disconnected during a phase is counted in its postmaster's)."""
    table: dict[int, tuple[str, int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        cpu = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        table[int(entry)] = (name, int(fields[1]), cpu / _TICK)
    return table


def _machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    total = sum(fields[:8])
    return (total - idle) / _TICK, total / _TICK


@dataclass(frozen=True)
class CpuSnapshot:
    per_process: dict[int, tuple[str, float]]  # pid -> (group, CPU seconds)
    busy: float
    total: float


def _tree(table: dict[int, tuple[str, int, float]], root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (_name, parent, _cpu) in table.items():
        children.setdefault(parent, []).append(pid)
    tree: set[int] = set()
    pending = [root]
    while pending:
        pid = pending.pop()
        if pid in table and pid not in tree:
            tree.add(pid)
            pending.extend(children.get(pid, []))
    return tree


def cpu_snapshot(server_pid: int, postmaster_pid: int) -> CpuSnapshot:
    """CPU seconds so far of the API server (the uvicorn tree), our PostgreSQL cluster and this load
    generator; whatever else the machine did is `other` (it is shared)."""
    table = _process_table()
    groups: dict[int, tuple[str, float]] = {os.getpid(): ("loadgen", table[os.getpid()][2])}
    for group, root in (("api", server_pid), ("postgres", postmaster_pid)):
        for pid in _tree(table, root):
            groups[pid] = (group, table[pid][2])
    busy, total = _machine_busy()
    return CpuSnapshot(groups, busy, total)


def cpu_used(before: CpuSnapshot, after: CpuSnapshot) -> dict[str, float]:
    """CPU seconds per group between two snapshots (a process that started in between counts from 0)."""
    used = {"api": 0.0, "postgres": 0.0, "loadgen": 0.0}
    for pid, (group, cpu) in after.per_process.items():
        start = before.per_process.get(pid, (group, 0.0))[1]
        used[group] += max(0.0, cpu - start)
    used["machine_busy"] = after.busy - before.busy
    used["other"] = max(0.0, used["machine_busy"] - used["api"] - used["postgres"] - used["loadgen"])
    used["machine_total"] = after.total - before.total
    return used


# --- statistics ------------------------------------------------------------------------------------------


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
