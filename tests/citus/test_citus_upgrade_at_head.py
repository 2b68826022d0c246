"""`pokna db upgrade` at the head revision does nothing on a distributed database, as docs/scaling.md
says ("run it again and nothing changes"), so the migration `pokna serve` runs at start does not depend on
every worker answering: a server restarted during a worker's outage is not kept down by it. (Until this
test, `ledger_post` was delegated again at every upgrade, and the upgrade failed while a worker was down.)"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from pokna.db import distribution, migrate
from support.citus import running_citus

pytestmark = pytest.mark.xdist_group("citus")

POKNA = Path(sys.executable).with_name("pokna")


def test_a_second_placement_runs_nothing(citus_database_url: str) -> None:
    engine = create_engine(citus_database_url)
    try:
        with engine.begin() as connection:
            assert distribution.distribute(connection) == []
    finally:
        engine.dispose()


def test_an_upgrade_at_the_head_needs_no_worker(tmp_path: Path) -> None:
    with running_citus() as cluster:
        url = cluster.new_database(f"pokna_at_head_{uuid.uuid4().hex[:8]}")
        migrate.upgrade(url)
        cluster.workers[1].halt()
        env = {**os.environ, "POKNA_DATABASE_URL": url, "POKNA_DATA_DIR": str(tmp_path)}
        upgraded = subprocess.run(
            [str(POKNA), "db", "upgrade"], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert upgraded.returncode == 0, upgraded.stderr
        assert upgraded.stdout.strip() == "database at head"
