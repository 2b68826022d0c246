"""The database goes away under load and comes back: clients see 503s (never a 500), their retries with
the same Idempotency-Key apply exactly once, and the service recovers by itself, with no restart.

Two outages on one real PostgreSQL started by this test, under eight clients moving money and playing
games: a clean stop (`pg_ctl stop -m fast`) and a crash (`-m immediate`, recovered from the WAL), each
for about three seconds. The figures (requests, how many met the fault, 503s, outage seconds) are
printed; run with `-s` to see them.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from pokna.db.engine import make_engine
from support.fault_load import Load, Targets, check_what_was_kept
from support.fault_servers import durable_primary, service_env, tenant_on
from support.game_play import Api
from support.postgres import Cluster
from support.servers import serving
from support.sessions import make_sessionmaker

pytestmark = pytest.mark.xdist_group("faults")
__all__ = ["durable_primary"]  # the fixture


def test_postgresql_stopped_and_started_under_load(durable_primary: Cluster, tmp_path: Path) -> None:
    url = durable_primary.url
    faults_at: list[float] = []
    with serving(service_env(url), tmp_path / "serve" / "data") as server:
        tenant_id, api_key = tenant_on(url)
        with Load(Targets([server.base]), api_key) as load:
            load.wait_for(lambda: load.answered_ok() >= 40)
            for mode in ("fast", "immediate"):
                faults_at.append(time.monotonic())
                durable_primary.halt(mode)
                time.sleep(3)
                durable_primary.restart()
                mark = load.answered_ok()
                load.wait_for(lambda mark=mark: load.answered_ok() >= mark + 40)  # type: ignore[misc]
        assert not load.failures, load.failures
        figures = load.figures(faults_at)
        print(f"\noutage under load: {figures}")
        assert figures["answered_500"] == 0
        assert figures["answered_503"] > 0  # the outage was seen, and seen as a 503
        assert figures["met_the_fault"] > 0
        engine = make_engine(url)
        try:
            with httpx.Client(base_url=server.base, timeout=30) as http:
                check_what_was_kept(load, make_sessionmaker(engine), Api(http, api_key), tenant_id)
        finally:
            engine.dispose()
