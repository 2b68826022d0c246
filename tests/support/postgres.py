"""A throwaway PostgreSQL cluster for one test run, made from the local server binaries.

The cluster lives in a temporary directory, listens only on 127.0.0.1 and a free port, runs with
durability off (it is thrown away), and is removed when the run ends, fails or is interrupted.
PostgreSQL refuses to run as root, so as root the server commands run as the `postgres` user.
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


class PostgresUnavailable(RuntimeError):
    pass


@dataclass
class Cluster:
    root: Path
    port: int
    bindir: Path
    as_user: list[str]

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        if not self.root.exists():
            return
        subprocess.run(
            [
                *self.as_user,
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.root / "data"),
                "-m",
                "immediate",
                "stop",
            ],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.root, ignore_errors=True)


def find_bindir() -> Path:
    explicit = os.environ.get("POKNA_PG_BINDIR")
    candidates = [explicit] if explicit else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    which = shutil.which("initdb")
    if which:
        candidates.append(str(Path(which).parent))
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    raise PostgresUnavailable("no PostgreSQL server binaries (initdb, pg_ctl) found; set POKNA_PG_BINDIR")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_cluster() -> Cluster:
    bindir = find_bindir()
    root = Path(tempfile.mkdtemp(prefix="pokna-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            postgres = pwd.getpwnam("postgres")
        except KeyError as exc:
            shutil.rmtree(root, ignore_errors=True)
            raise PostgresUnavailable(
                "running as root and there is no `postgres` user to run the server"
            ) from exc
        os.chown(root, postgres.pw_uid, postgres.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    root.chmod(0o700)
    cluster = Cluster(root=root, port=0, bindir=bindir, as_user=as_user)
    try:
        _run(
            as_user,
            [
                str(bindir / "initdb"),
                "-D",
                str(root / "data"),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ],
        )
        for _attempt in range(5):
            cluster.port = _free_port()
            options = (
                f"-p {cluster.port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300 "
                # Off UTC, with a half-hour offset and daylight saving: nothing may depend on the
                # server's zone (timestamps read back as JSON text carry the session's offset).
                "-c timezone=America/St_Johns"
            )
            started = subprocess.run(
                [
                    *as_user,
                    str(bindir / "pg_ctl"),
                    "-D",
                    str(root / "data"),
                    "-o",
                    options,
                    "-l",
                    str(root / "server.log"),
                    "-w",
                    "-t",
                    "60",
                    "start",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if started.returncode == 0:
                return cluster
        log = (root / "server.log").read_text() if (root / "server.log").exists() else ""
        raise PostgresUnavailable(f"pg_ctl start failed: {started.stderr.strip()} {log[-2000:]}")
    except BaseException:
        cluster.stop()
        raise


def _run(as_user: list[str], argv: list[str]) -> None:
    result = subprocess.run([*as_user, *argv], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise PostgresUnavailable(
            f"{Path(argv[0]).name} failed: {result.stderr.strip() or result.stdout.strip()}"
        )


def stop_on_exit(cluster: Cluster) -> None:
    """Remove the cluster however the run ends: normally, by Ctrl-C, by SIGTERM."""
    atexit.register(cluster.stop)
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: object) -> None:
        cluster.stop()
        if callable(previous):
            previous(signum, frame)  # type: ignore[arg-type]
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
