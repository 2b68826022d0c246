"""docs/scaling.md's "Setting it up" block, run as it is written (bash, psql and the CLI) on a fresh
database of the Citus cluster: every table of the map is placed as the map says, every delegated function
is delegated, a second `pokna db upgrade` changes nothing, and a server on the result takes money and
plays a game."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from pokna.db import migrate
from pokna.db.distribution import DELEGATED_FUNCTIONS, OWN_KEYS, PLACEMENT, Placement
from support.citus import CitusCluster, citus_bindir
from support.game_play import Api, play
from support.servers import serving
from support.tenant_api import api_key_on

pytestmark = pytest.mark.xdist_group("citus")

ROOT = Path(__file__).resolve().parents[2]


def _block() -> str:
    scaling = (ROOT / "docs" / "scaling.md").read_text()
    section = scaling[scaling.index("## Setting it up: the operator's path") :]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    assert block is not None
    return block.group(1)


def _libpq(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _run(script: str, env: dict[str, str]) -> None:
    ran = subprocess.run(
        ["bash", "-ec", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert ran.returncode == 0, ran.stderr + ran.stdout


def test_the_documented_commands_distribute_the_schema(citus_cluster: CitusCluster, tmp_path: Path) -> None:
    name = f"pokna_operator_{uuid.uuid4().hex[:8]}"
    for node in citus_cluster.nodes:  # the database the image's POSTGRES_DB would have made
        engine = create_engine(node.url, isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        engine.dispose()
    citus_cluster.databases.append(name)
    coordinator, (worker1, worker2) = citus_cluster.coordinator, citus_cluster.workers
    url = citus_cluster.url(coordinator, name)
    bin_folder = Path(sys.executable).parent  # the virtual environment's `pokna`
    env = {
        **os.environ,
        "PATH": f"{citus_bindir()}{os.pathsep}{bin_folder}{os.pathsep}{os.environ['PATH']}",
        "COORDINATOR": _libpq(url),
        "WORKER1": _libpq(citus_cluster.url(worker1, name)),
        "WORKER2": _libpq(citus_cluster.url(worker2, name)),
        "COORDINATOR_HOST": "127.0.0.1",
        "COORDINATOR_PORT": str(coordinator.port),
        "WORKER1_HOST": "127.0.0.1",
        "WORKER1_PORT": str(worker1.port),
        "WORKER2_HOST": "127.0.0.1",
        "WORKER2_PORT": str(worker2.port),
        "POKNA_DATABASE_URL": url,
        "POKNA_DATA_DIR": str(tmp_path / "data"),
    }
    script = _block()
    _run(script, env)

    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT logicalrelid::regclass::text, "
                    "CASE WHEN partmethod = 'n' THEN 'reference' "
                    "ELSE column_to_column_name(logicalrelid, partkey) END FROM pg_dist_partition"
                )
            )
            placed = {str(table): str(column) for table, column in rows}
            delegated = connection.scalar(
                text("SELECT count(*) FROM pg_dist_object WHERE distribution_argument_index IS NOT NULL")
            )
        expected = {
            table: "reference" if placement is Placement.REFERENCE else OWN_KEYS.get(table, "tenant_id")
            for table, placement in PLACEMENT.items()
        }
        assert placed == expected
        assert delegated == len(DELEGATED_FUNCTIONS)

        # Idempotent: the last line again (as every later upgrade runs it) changes nothing.
        _run("pokna db upgrade", env)
        with engine.connect() as connection:
            again = connection.scalar(text("SELECT count(*) FROM pg_dist_partition"))
        assert again == len(expected)
    finally:
        engine.dispose()

    api_key = api_key_on(url, "Mos Eisley")
    with (
        serving({"POKNA_DATABASE_URL": url}, tmp_path / "served") as server,
        httpx.Client(base_url=server.base, timeout=30) as http,
    ):
        api = Api(http, api_key)
        wallets = [api.wallet(50) for _ in range(3)]
        game = play([api], api.create_game(wallets[0], wallets[1:], stake=5))
        assert game["status"] == "settled"
        assert sum(api.balance(wallet) for wallet in wallets) == 150


def test_a_distributed_database_refuses_to_downgrade_its_tenant_ids_with_a_reason(
    citus_database_url: str,
) -> None:
    """Citus cannot change a distribution column's type: migration 0015's downgrade says so, before any change."""
    with pytest.raises(Exception, match="tenant ids stay text on a distributed"):
        migrate.downgrade(citus_database_url, "0014_ledger_chains")
    engine = create_engine(citus_database_url)
    try:
        with engine.connect() as connection:
            assert (
                connection.scalar(text("SELECT version_num FROM alembic_version")) == migrate.head_revision()
            )
    finally:
        engine.dispose()
