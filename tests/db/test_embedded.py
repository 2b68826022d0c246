"""The embedded default: a private PostgreSQL in the data directory, made and started on demand, on a Unix
socket only, shared by every command, started again after a crash, never started for an operator's URL."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text

from pokna.db import embedded
from pokna.db.engine import make_engine

POKNA = str(Path(sys.executable).with_name("pokna"))
pytestmark = pytest.mark.xdist_group("embedded")


@pytest.fixture
def data_dir(cluster_home: Path) -> Iterator[Path]:
    directory = cluster_home / "data"
    yield directory
    with contextlib.suppress(embedded.EmbeddedDatabaseError):
        embedded.cluster_of(directory).stop("immediate")


def _scalar(url: str, sql: str) -> object:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return connection.execute(text(sql)).scalar_one()
    finally:
        engine.dispose()


def test_the_first_command_makes_and_starts_it_and_the_next_share_it(data_dir: Path) -> None:
    url = embedded.database_url(None, data_dir)
    cluster = embedded.cluster_of(data_dir)
    assert cluster.is_running()
    assert "host=" in url
    assert _scalar(url, "SELECT current_database()") == "pokna"
    assert _scalar(url, "SHOW listen_addresses") == ""  # a Unix socket only: no TCP port
    version = _scalar(url, "SELECT current_setting('server_version_num')::int")
    assert isinstance(version, int)
    assert version >= 140000
    assert cluster.ensure_running() is False  # already running: nothing started
    assert embedded.database_url(None, data_dir) == url


def test_a_killed_cluster_comes_back_on_the_next_command_with_its_data(data_dir: Path) -> None:
    url = embedded.database_url(None, data_dir)
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE kept (n int)"))
            connection.execute(text("INSERT INTO kept VALUES (7)"))
    finally:
        engine.dispose()
    cluster = embedded.cluster_of(data_dir)
    postmaster = int((cluster.pgdata / "postmaster.pid").read_text().split()[0])
    os.kill(postmaster, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while cluster.is_running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not cluster.is_running()
    assert embedded.database_url(None, data_dir) == url
    assert _scalar(url, "SELECT n FROM kept") == 7


def test_an_operators_url_never_starts_anything(tmp_path: Path) -> None:
    url = "postgresql+psycopg://pokna@db.example/pokna"
    assert embedded.database_url(url, tmp_path / "data") == url
    assert not (tmp_path / "data").exists()


def test_one_server_holds_a_data_directory_at_a_time(tmp_path: Path) -> None:
    with (
        embedded.serving_from(tmp_path),
        pytest.raises(embedded.DataDirectoryInUse, match=f"pid {os.getpid()}"),
        embedded.serving_from(tmp_path),
    ):
        pass
    with embedded.serving_from(tmp_path):  # released with its holder
        pass


def test_pokna_db_stop_stops_it_and_the_next_command_starts_it(data_dir: Path) -> None:
    env = {**os.environ, "POKNA_DATA_DIR": str(data_dir), "POKNA_DATABASE_URL": ""}

    def pokna(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [POKNA, *args], env=env, capture_output=True, text=True, timeout=120, check=False
        )

    upgraded = pokna("db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    cluster = embedded.cluster_of(data_dir)
    assert cluster.is_running()
    stopped = pokna("db", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert not cluster.is_running()
    current = pokna("db", "current")
    assert current.returncode == 0, current.stderr
    assert "(head)" in current.stdout
    refused = subprocess.run(
        [POKNA, "db", "stop"],
        env={**env, "POKNA_DATABASE_URL": "postgresql+psycopg://pokna@db.example/pokna"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode != 0
    assert "does not start or stop it" in refused.stderr


def test_binaries_that_are_not_there_are_named(tmp_path: Path) -> None:
    with pytest.raises(embedded.EmbeddedDatabaseError, match="POKNA_POSTGRES_BINDIR"):
        embedded.bindir(tmp_path)


def test_the_socket_of_a_deep_data_directory_still_fits(cluster_home: Path) -> None:
    deep = cluster_home.joinpath(*["d" * 20] * 5)
    cluster = embedded.cluster_of(deep)
    assert len(str(cluster.socket_dir / ".s.PGSQL.5432")) < 108
    try:
        url = embedded.database_url(None, deep)
        with psycopg.connect(
            host=str(cluster.socket_dir), port=5432, user="postgres", dbname="pokna"
        ) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert str(cluster.socket_dir) in url
    finally:
        cluster.stop("immediate")
