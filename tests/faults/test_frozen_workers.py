"""The background workers' `--max-seconds` ("stop after this long, at the latest") holds while PostgreSQL
stops answering (every server process SIGSTOPped): a worker whose statement waits on the frozen server
stops by its deadline, not when the server resumes.

Before, `pokna log sequence` and `pokna webhooks deliver` looked at the deadline only between steps, and
a command's statements have no timeout (a large export may run long), so a worker scheduled with
`--max-seconds` ran for as long as the freeze lasted, and the next one started beside it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pokna.db import migrate
from support.fault_servers import durable_primary, service_env, tenant_on
from support.postgres import Cluster

pytestmark = pytest.mark.xdist_group("faults")
__all__ = ["durable_primary"]  # the fixture

MAX_SECONDS = 4.0
FREEZE_SECONDS = 60.0
"""Well past the deadline, its grace (STOP_GRACE_SECONDS) and the cut step's own ending: psycopg's
cancellation of the unanswered statement and the pool's close, each waiting for the frozen server a while."""
WORKERS = {
    "sequencer": ["log", "sequence", "--interval", "0.1"],
    "webhooks": ["webhooks", "deliver", "--poll-seconds", "0.1"],
}


@pytest.mark.parametrize("worker", sorted(WORKERS))
def test_a_worker_stops_by_its_deadline_while_the_database_is_frozen(
    durable_primary: Cluster, tmp_path: Path, worker: str
) -> None:
    migrate.upgrade(durable_primary.url)
    tenant_on(durable_primary.url)  # a tenant for the worker's passes to look at
    env = {**os.environ, **service_env(durable_primary.url), "POKNA_DATA_DIR": str(tmp_path / "data")}
    pokna = str(Path(sys.executable).with_name("pokna"))
    command = [pokna, *WORKERS[worker], "--max-seconds", str(MAX_SECONDS), "--json"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(MAX_SECONDS / 2)  # started, connected, passes going by
        with durable_primary.frozen():
            try:
                process.wait(timeout=FREEZE_SECONDS)
            except subprocess.TimeoutExpired:
                stopped_while_frozen = False
            else:
                stopped_while_frozen = True
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert stopped_while_frozen, (out, err)
    assert process.returncode != 0, (out, err)  # its work was cut short: not a clean report
    assert "database" in err, err  # said why, as a command that cannot reach it does
