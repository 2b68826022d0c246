"""deploy/citus/repro-local-plan-cache/, the SQL-only reproducer of Citus's local plan cache that never hits
and grows (issue 45), run as its README tells an operator to: each command of its block, on the test cluster.

It is why pokna.db.distribution.WORKER_FUNCTION_SETTINGS exists: under PL/pgSQL's generic plans Citus 14.0.1
deparses, parses and plans each routed statement's shard query again at every execution inside a function on
a worker and keeps every plan for the connection's life; `plan_cache_mode = force_custom_plan` on the
function keeps the backend flat. When a Citus release fixes the cache, the tests of the bug fail and say so;
the test of the workaround holds either way. (Seen on a build of 14.0.1 with the reproducer's fix.diff: the
backend 2.5 -> 2.9 -> 2.9 MB, each shard query planned once, the two tests of the bug failing with FIXED.)
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from support.citus import CitusCluster, citus_bindir

pytestmark = pytest.mark.xdist_group("citus")

REPRODUCER = Path(__file__).resolve().parents[2] / "deploy" / "citus" / "repro-local-plan-cache"
STATEMENTS = 3  # repro_touch()'s INSERT, UPDATE and SELECT, each by its distribution key
CALLS = 300  # check.sql's N (it calls 2N in all)
REPLAN_CALLS = 20  # replans.sql's calls
# Under generic plans 24 MB from N to 2N calls (70-95 KB a call); with force_custom_plan 0.2 MB in all.
GROWS_MB = 10.0
FLAT_MB = 1.0
FIXED = (
    "the bug of deploy/citus/repro-local-plan-cache/ looks fixed upstream in this Citus: update its README, "
    "and pokna.db.distribution.WORKER_FUNCTION_SETTINGS (plan_cache_mode = force_custom_plan on every "
    "delegated function, docs/scaling.md 'Plans on the workers') may be revisited"
)

Memory = dict[int, tuple[float, float]]  # calls -> (backend MB, the statements' CachedPlan MB)


def _block() -> list[str]:
    readme = (REPRODUCER / "README.md").read_text()
    section = readme[readme.index("## Reproducing") :]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    assert block is not None
    return block.group(1).strip().splitlines()


@pytest.fixture(scope="module")
def outputs(citus_cluster: CitusCluster) -> Iterator[dict[str, str]]:
    """What each command of the README's block printed, by the command."""
    name = f"repro_{uuid.uuid4().hex[:8]}"
    url = citus_cluster.new_database(name)
    worker = citus_cluster.url(citus_cluster.workers[0], name)
    env = {
        **os.environ,
        "PATH": f"{citus_bindir()}{os.pathsep}{os.environ['PATH']}",  # the cluster's own psql
        "COORDINATOR": make_url(url).set(drivername="postgresql").render_as_string(hide_password=False),
        "WORKER": make_url(worker).set(drivername="postgresql").render_as_string(hide_password=False),
    }
    printed = {}
    try:
        for command in _block():
            ran = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", command],  # psql's failure, not sed's
                cwd=REPRODUCER,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert ran.returncode == 0, f"{command}\n{ran.stderr}{ran.stdout}"
            assert "ERROR" not in ran.stderr, f"{command}\n{ran.stderr}"
            printed[command] = ran.stdout
        yield printed
    finally:
        citus_cluster.drop_database(name)


def _printed(outputs: dict[str, str], script: str, mode: str) -> str:
    (output,) = [out for command, out in outputs.items() if script in command and f"mode={mode} " in command]
    return output


def _memory(outputs: dict[str, str], mode: str) -> Memory:
    """check.sql's table: its rows `mode | calls | backend_mb | cached_plan_mb`."""
    rows = [line.split("|") for line in _printed(outputs, "check.sql", mode).splitlines()]
    memory = {
        int(calls): (float(backend), float(cached))
        for shown, calls, backend, cached in (row for row in rows if len(row) == 4)
        if shown.strip() == mode
    }
    assert sorted(memory) == [0, CALLS, 2 * CALLS], memory
    return memory


def _replans(outputs: dict[str, str], mode: str) -> dict[str, int]:
    """The shard queries Citus planned for its local plan cache, and how often (`uniq -c`)."""
    counted = [line.strip().split(" ", 1) for line in _printed(outputs, "replans.sql", mode).splitlines()]
    return {query: int(count) for count, query in counted}


def test_the_workaround_keeps_a_worker_backend_flat(outputs: dict[str, str]) -> None:
    memory = _memory(outputs, "force_custom_plan")
    backend, cached = zip(*(memory[calls] for calls in (0, CALLS, 2 * CALLS)), strict=True)
    assert backend[2] - backend[0] < FLAT_MB, f"force_custom_plan: the backend grew {memory}"
    assert cached == (0.0, 0.0, 0.0), memory
    assert _replans(outputs, "force_custom_plan") == {}, "force_custom_plan: Citus cached a local plan"


def test_generic_plans_make_a_worker_backend_grow_at_every_call(outputs: dict[str, str]) -> None:
    memory = _memory(outputs, "auto")
    (_, cached_0), (backend_n, cached_n), (backend_2n, cached_2n) = (memory[c] for c in (0, CALLS, 2 * CALLS))
    assert cached_0 == 0.0, memory
    # A cache that hit would stop growing once each statement's plan was made: well before call N.
    assert backend_2n - backend_n > GROWS_MB, f"{memory}: {FIXED}"
    assert cached_2n > 1.8 * cached_n, f"{memory}: {FIXED}"


def test_generic_plans_plan_the_shard_query_again_at_every_call(outputs: dict[str, str]) -> None:
    replans = _replans(outputs, "auto")
    # A cache that hit would plan each shard query once. PL/pgSQL plans the first five calls as custom plans
    # and Citus caches from the generic plan's second execution: each is planned at calls 7 to 20 (14 times).
    assert min(replans.values(), default=0) > REPLAN_CALLS // 2, f"{replans}: {FIXED}"
    assert len(replans) == STATEMENTS, replans
    assert all(query.startswith(("INSERT", "UPDATE", "SELECT")) for query in replans), replans
