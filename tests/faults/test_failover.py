"""Failover to a synchronous standby under load, with nothing acknowledged lost.

This test builds the production topology on this machine: a primary, a streaming standby made from it
with `pg_basebackup -R`, and `synchronous_standby_names = '*'` on the primary (`synchronous_commit=on`),
so the primary acknowledges a commit only once the standby has written its WAL. The service names both
servers in one libpq multi-host URL with `target_session_attrs=read-write`, so it connects to whichever
one accepts writes. Eight clients move money and play games; the primary is killed with SIGKILL, the
standby promoted (`pg_ctl promote`), and the service follows by itself. Every request answered 2xx
before the kill is on the promoted standby; every request in flight, retried with its key, applied once;
the books, the hash chain and every proof verify. Run with `-s` to see the figures.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pokna.db.engine import make_engine
from support.fault_load import Load, Targets, check_what_was_kept
from support.fault_servers import durable_primary, service_env, tenant_on
from support.game_play import Api
from support.postgres import Cluster, start_standby, sync_state
from support.servers import serving
from support.sessions import make_sessionmaker

pytestmark = pytest.mark.xdist_group("faults")
__all__ = ["durable_primary"]  # the fixture


@pytest.fixture
def standby(durable_primary: Cluster) -> Iterator[Cluster]:
    cluster = start_standby(durable_primary)
    try:
        deadline = time.monotonic() + 60
        while sync_state(durable_primary) != ["sync"]:
            assert time.monotonic() < deadline, "the standby never became synchronous"
            time.sleep(0.1)
        yield cluster
    finally:
        cluster.stop()


def multi_host_url(*clusters: Cluster) -> str:
    """The form docs/operations.md gives: every server, and only a writable one will do."""
    hosts = "&".join(f"host=127.0.0.1:{cluster.port}" for cluster in clusters)
    return f"postgresql+psycopg://postgres@/postgres?{hosts}&target_session_attrs=read-write"


def test_the_service_follows_a_promoted_synchronous_standby_and_loses_nothing_acknowledged(
    durable_primary: Cluster, standby: Cluster, tmp_path: Path
) -> None:
    url = multi_host_url(durable_primary, standby)
    with serving(service_env(url), tmp_path / "serve" / "data") as server:
        tenant_id, api_key = tenant_on(url)
        with Load(Targets([server.base]), api_key) as load:
            load.wait_for(lambda: load.answered_ok() >= 60)
            killed_at = time.monotonic()
            durable_primary.kill()
            time.sleep(1)  # the operator (or the failover manager) notices
            standby.promote()
            mark = load.answered_ok()
            load.wait_for(lambda: load.answered_ok() >= mark + 60)
        assert not load.failures, load.failures
        acknowledged_before = [
            request
            for request in load.requests
            if request.attempts
            and request.attempts[0].answered_at < killed_at
            and request.status is not None
            and request.status < 300
            and len(request.attempts) == 1
        ]
        figures = {
            **load.figures([killed_at]),
            "acknowledged_before_the_kill": len(acknowledged_before),
        }
        print(f"\nfailover under load: {figures}")
        assert figures["answered_500"] == 0
        assert figures["met_the_fault"] > 0
        engine = make_engine(url)
        try:
            with httpx.Client(base_url=server.base, timeout=30) as http:
                # All of them, those acknowledged before the kill among them, are on the promoted standby.
                check_what_was_kept(load, make_sessionmaker(engine), Api(http, api_key), tenant_id)
        finally:
            engine.dispose()
