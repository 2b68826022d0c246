"""`pokna serve` as a user runs it: a real process, migrating its own database, answering over HTTP; on the
embedded default, a private PostgreSQL that the other commands share, that one server holds at a time and
that stops with the server that started it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from pokna.db import embedded, migrate
from support.servers import free_port, running_server

POKNA = str(Path(sys.executable).with_name("pokna"))


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())


def _pokna(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "POKNA_DATA_DIR": str(data_dir), "POKNA_DATABASE_URL": ""}
    return subprocess.run([POKNA, *args], env=env, capture_output=True, text=True, timeout=120, check=False)


def test_serve_on_the_embedded_default_runs_a_private_postgresql(cluster_home: Path) -> None:
    data_dir = cluster_home / "fresh" / ".pokna"
    cluster = embedded.cluster_of(data_dir)
    with running_server({"POKNA_DATABASE_URL": ""}, data_dir) as base:
        assert _get(f"{base}/healthz") == (200, {"status": "ok"})
        status, ready = _get(f"{base}/readyz")
        assert status == 200
        assert ready["database"] == "postgresql"
        assert ready["embedded"] is True
        assert ready["schema_revision"] == migrate.head_revision()
        assert cluster.is_running()

        # The CLI next to it needs no URL: the key it prints works against the server.
        created = _pokna(data_dir, "tenants", "create", "Chalmun's Cantina", "--json")
        assert created.returncode == 0, created.stderr
        api_key = json.loads(created.stdout)["api_key"]
        status, _ = _get(f"{base}/v1/ledger/trial-balance", {"Authorization": f"Bearer {api_key}"})
        assert status == 200

        # A second server on the same data directory is refused by name, not let in to share it.
        second = subprocess.run(
            [POKNA, "serve", "--port", str(free_port())],
            env={**os.environ, "POKNA_DATA_DIR": str(data_dir), "POKNA_DATABASE_URL": ""},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert second.returncode != 0
        assert "in use by another `pokna serve`" in second.stderr
        assert _get(f"{base}/readyz")[0] == 200

        # Nor is `pokna db stop` let stop the cluster under it (issue 37, item 2: the server then answered
        # 503 to everything and never started its cluster again).
        stop = _pokna(data_dir, "db", "stop")
        assert stop.returncode == 1, stop.stderr
        assert stop.stderr.startswith("error: `pokna serve` (pid "), stop.stderr
        assert "stop that server first" in stop.stderr
        assert cluster.is_running()
        assert _get(f"{base}/readyz")[0] == 200
    assert not cluster.is_running()  # the server started it, so the server stopped it


def test_serve_with_a_database_url_and_two_workers(empty_database_url: str, tmp_path: Path) -> None:
    with running_server(
        {"POKNA_DATABASE_URL": empty_database_url}, tmp_path / "data", "--workers", "2"
    ) as base:
        answers = [_get(f"{base}/readyz")[1] for _ in range(6)]
    assert {(answer["database"], answer["embedded"]) for answer in answers} == {("postgresql", False)}
    assert not (tmp_path / "data" / "postgres").exists()  # an operator's database: nothing started here


def test_a_one_off_command_says_it_left_the_cluster_running_and_a_failed_one_stops_it(
    cluster_home: Path,
) -> None:
    """Issue 37, item 10: a command that started the embedded PostgreSQL for itself says so in one line
    (the cluster stays up for the next command); one that failed stops what it started."""
    data_dir = cluster_home / "one-off" / ".pokna"
    cluster = embedded.cluster_of(data_dir)
    try:
        upgraded = _pokna(data_dir, "db", "upgrade")
        assert upgraded.returncode == 0, upgraded.stderr
        assert upgraded.stderr.splitlines() == [
            f"started the embedded PostgreSQL in {cluster.pgdata}; it stays up for the next command "
            "(`pokna db stop` stops it)"
        ]
        assert cluster.is_running()

        # Already running: nothing to say.
        created = _pokna(data_dir, "tenants", "create", "Chalmun's Cantina", "--json")
        assert created.returncode == 0, created.stderr
        assert created.stderr == ""

        stopped = _pokna(data_dir, "db", "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert not cluster.is_running()

        # A failing command that had to start the cluster stops it again; its error is its one line.
        failed = _pokna(data_dir, "tenants", "keys", "list", "no-such-tenant")
        assert failed.returncode == 2, failed.stderr
        assert failed.stderr.splitlines() == [
            "error: no tenant 'no-such-tenant' (`pokna tenants list` shows the tenants)"
        ]
        assert not cluster.is_running()
    finally:
        cluster.stop()


def _living_members(group: int) -> list[int]:
    """The processes of a process group that still run (a zombie has ended; its parent has yet to reap it)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def _ended(group: int, seconds: float = 10) -> list[int]:
    """The members of a process group still running after up to `seconds`. A supervisor that has exited may
    leave multiprocessing's resource tracker in its group for a moment: it ends when it reads the end of
    its pipe, which the supervisor's exit closes."""
    for _ in range(int(seconds / 0.2)):
        if not _living_members(group):
            break
        time.sleep(0.2)
    return _living_members(group)


def _serving(port: int, env: dict[str, str], log: Path, *extra: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:
        return subprocess.Popen(
            [POKNA, "serve", "--port", str(port), *extra],
            env={**os.environ, **env},
            stdout=output,
            stderr=output,
            start_new_session=True,  # its own process group: everything it starts, found and ended by it
        )


def _answers(base: str, process: subprocess.Popen[bytes], log: Path) -> bool:
    for _ in range(300):  # 60 s at most
        assert process.poll() is None, log.read_text()
        try:
            return _get(f"{base}/healthz") == (200, {"status": "ok"})
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"pokna serve did not answer within 60 s:\n{log.read_text()}")


def test_the_workers_of_a_killed_supervisor_end_and_the_port_serves_again(
    empty_database_url: str, tmp_path: Path
) -> None:
    """Issue 46, L5: SIGKILL of the supervisor left its two workers serving on the port, orphaned, so the
    next `pokna serve` was refused ("port … already in use") until someone found and killed them."""
    port = free_port()
    env = {"POKNA_DATABASE_URL": empty_database_url, "POKNA_DATA_DIR": str(tmp_path / "data")}
    first = _serving(port, env, tmp_path / "first.log", "--workers", "2")
    second: subprocess.Popen[bytes] | None = None
    try:
        assert _answers(f"http://127.0.0.1:{port}", first, tmp_path / "first.log")
        assert len(_living_members(first.pid)) >= 3  # the supervisor and its two workers
        first.kill()
        first.wait(timeout=10)
        # The kernel sends the workers SIGTERM as the supervisor dies; they finish what they serve.
        assert _ended(first.pid, seconds=30) == [], "the killed supervisor's workers are still running"

        second = _serving(port, env, tmp_path / "second.log", "--workers", "2")
        assert _answers(f"http://127.0.0.1:{port}", second, tmp_path / "second.log")
        second.terminate()
        assert second.wait(timeout=30) == 0, (tmp_path / "second.log").read_text()
        assert _ended(second.pid) == []  # SIGTERM stays clean
    finally:
        for process in (first, second):
            if process is not None:
                if _living_members(process.pid):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
