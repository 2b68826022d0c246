"""Serving through the workers (docs/scaling.md, "Serving through the workers"): Citus gives every worker
the metadata, so `pokna serve` may connect to the workers instead of the coordinator. What the docs tell an
operator is run as written, on the cluster: the server starts on a URL naming both workers (its migration
at start finds nothing to do), `/readyz` answers 200 there, a tenant plays and moves money through it with
the books whole, and the schema stays the coordinator's to change: a migration asked of a worker is
refused with a reason and changes nothing, at any revision."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from pokna.db import migrate
from support.citus import CitusCluster
from support.game_play import Api, play
from support.servers import free_port, serving
from support.tenant_api import api_key_on

pytestmark = pytest.mark.xdist_group("citus")

POKNA = Path(sys.executable).with_name("pokna")


def _workers_url(cluster: CitusCluster, database: str) -> str:
    """The workers as one libpq multi-host URL, each new connection to one of them at random."""
    hosts = "&".join(f"host=127.0.0.1:{worker.port}" for worker in cluster.workers)
    return f"postgresql+psycopg://postgres@/{database}?{hosts}&load_balance_hosts=random"


def _database(url: str) -> str:
    name = make_url(url).database
    assert name is not None
    return name


def _pokna(url: str, data_dir: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "POKNA_DATABASE_URL": url, "POKNA_DATA_DIR": str(data_dir)}
    return subprocess.run(
        [str(POKNA), *arguments], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _revision(coordinator_url: str) -> str | None:
    engine = create_engine(coordinator_url)
    try:
        with engine.connect() as connection:
            return migrate.current_revision(connection)
    finally:
        engine.dispose()


def _scalar(url: str, statement: str) -> object:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return connection.scalar(text(statement))
    finally:
        engine.dispose()


def _execute(url: str, statement: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(text(statement))
    finally:
        engine.dispose()


def test_a_server_on_the_workers_is_ready_and_keeps_the_books(
    citus_cluster: CitusCluster, citus_database_url: str, tmp_path: Path
) -> None:
    workers = _workers_url(citus_cluster, _database(citus_database_url))
    api_key = api_key_on(citus_database_url, "Mos Espa")
    with (
        serving({"POKNA_DATABASE_URL": workers}, tmp_path / "served") as server,
        httpx.Client(base_url=server.base, timeout=30) as http,
    ):
        ready = http.get("/readyz")
        assert ready.status_code == 200, ready.text
        api = Api(http, api_key)
        wallets = [api.wallet(50) for _ in range(3)]
        for _ in range(3):
            game = play([api], api.create_game(wallets[0], wallets[1:], stake=5))
            assert game["status"] == "settled"
        key = "withdrawal-through-a-worker"
        first = api.post(f"/v1/accounts/{wallets[1]}/withdrawals", {"amount": 7}, idempotency_key=key)
        again = api.post(f"/v1/accounts/{wallets[1]}/withdrawals", {"amount": 7}, idempotency_key=key)
        assert first.status_code == again.status_code == 201, (first.text, again.text)
        assert again.headers.get("Idempotent-Replayed") == "true"
        assert again.json() == first.json()
        assert sum(api.balance(wallet) for wallet in wallets) == 150 - 7
        assert api.trial_balance_total() == 0
    # The coordinator sees the same books: every posting balanced, each wallet where the workers left it.
    assert _scalar(citus_database_url, "SELECT sum(amount) FROM posting") == 0
    assert _scalar(citus_database_url, "SELECT count(*) FROM posting") == _scalar(
        citus_database_url, "SELECT sum(posting_count) FROM journal_transaction"
    )
    assert _scalar(citus_database_url, "SELECT sum(balance) FROM account") == 0


def test_the_schema_is_the_coordinators_to_change(
    citus_cluster: CitusCluster, citus_database_url: str, tmp_path: Path
) -> None:
    worker = citus_cluster.url(citus_cluster.workers[0], _database(citus_database_url))
    head = migrate.head_revision()
    assert head is not None

    current = _pokna(worker, tmp_path, "db", "current")
    assert current.returncode == 0, current.stderr
    assert current.stdout.strip() == f"{head} (head)"  # the worker reads the revision from its own copy
    for destination in ("head", "heads", head[:4]):  # nothing to do, however the head is named
        at_head = _pokna(worker, tmp_path, "db", "upgrade", destination)
        assert at_head.returncode == 0, at_head.stderr

    refused = _pokna(worker, tmp_path, "db", "downgrade", "-1")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "only the coordinator changes the schema" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert _revision(citus_database_url) == head

    behind = _pokna(citus_database_url, tmp_path, "db", "downgrade", "-1")
    assert behind.returncode == 0, behind.stderr
    previous = _revision(citus_database_url)
    assert previous not in (None, head)
    refused = _pokna(worker, tmp_path, "db", "upgrade")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert f"a Citus worker's (at {previous})" in refused.stderr
    # A server of this release started on the workers meets the same refusal, and says so.
    served = _pokna(worker, tmp_path, "serve", "--port", str(free_port()))
    assert served.returncode == 1, served.stdout + served.stderr
    assert "only the coordinator changes the schema" in served.stderr
    assert _revision(citus_database_url) == previous

    upgraded = _pokna(citus_database_url, tmp_path, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert _revision(citus_database_url) == head
    assert _pokna(worker, tmp_path, "db", "current").stdout.strip() == f"{head} (head)"


def test_a_worker_migrated_by_a_newer_release_says_so(
    citus_cluster: CitusCluster, citus_database_url: str, tmp_path: Path
) -> None:
    worker = citus_cluster.url(citus_cluster.workers[0], _database(citus_database_url))
    newer = "9999_from_a_newer_release"
    _execute(citus_database_url, f"UPDATE alembic_version SET version_num = '{newer}'")
    refused = _pokna(worker, tmp_path, "db", "upgrade")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert f"a Citus worker's (at {newer}), a revision this release of Pokna does not know" in refused.stderr
    assert _revision(citus_database_url) == newer


def test_a_database_distributed_before_keeps_its_revision_on_the_coordinator_until_upgraded(
    citus_cluster: CitusCluster, citus_database_url: str, tmp_path: Path
) -> None:
    """A database distributed by an earlier release has `alembic_version` on the coordinator alone; the
    next `pokna db upgrade` copies it to every node, and a worker reads the revision from then on."""
    _execute(citus_database_url, "SELECT undistribute_table('alembic_version')")
    worker = citus_cluster.url(citus_cluster.workers[1], _database(citus_database_url))
    head = migrate.head_revision()
    assert _pokna(worker, tmp_path, "db", "current").stdout.strip() == f"empty (head is {head})"
    refused = _pokna(worker, tmp_path, "db", "upgrade")  # what a server's start-up migration meets there
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "a Citus worker's (at no revision): only the coordinator changes the schema" in refused.stderr
    # A release behind: the upgrade that brings the schema to the head places the table in the same
    # transaction, after the migrations have written their revision to it.
    behind = _pokna(citus_database_url, tmp_path, "db", "downgrade", "-1")
    assert behind.returncode == 0, behind.stderr

    upgraded = _pokna(citus_database_url, tmp_path, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    placed = _scalar(
        citus_database_url,
        "SELECT partmethod FROM pg_dist_partition WHERE logicalrelid = 'alembic_version'::regclass",
    )
    assert placed == "n"  # a reference table
    assert _pokna(worker, tmp_path, "db", "current").stdout.strip() == f"{head} (head)"
