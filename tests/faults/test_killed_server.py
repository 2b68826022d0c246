"""`pokna serve` killed with SIGKILL in the middle of requests: the clients' retries, sent at once to
another replica with the same Idempotency-Key, apply at once, and every game action among them applies
as the player chose, however short the turn deadline.

Four replicas on one PostgreSQL (as behind a load balancer), eight clients playing games with 5-second
turn deadlines (the shortest there is). Three times, with requests in flight, one replica is killed
and the load balancer sends the retries to the others. A claim dies with its holder's connection, so no retry waits out a
lease (which used to answer 409 for a minute while the deadline applied the default instead). Run with
`-s` to see the figures.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
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
KILLS = 3


def test_requests_cut_off_by_a_killed_server_apply_when_retried(
    durable_primary: Cluster, tmp_path: Path
) -> None:
    url = durable_primary.url
    env = service_env(url)
    kills_at: list[float] = []
    with ExitStack() as servers:
        replicas = [servers.enter_context(serving(env, tmp_path / name / "data")) for name in "abcd"]
        tenant_id, api_key = tenant_on(url)
        targets = Targets([replica.base for replica in replicas])
        with Load(targets, api_key, turn_timeout_seconds=5) as load:
            load.wait_for(lambda: load.answered_ok() >= 40)
            for kill in range(KILLS):
                load.wait_for(lambda: load.in_flight() >= 4)
                victim = replicas[kill]
                victim.process.kill()
                kills_at.append(time.monotonic())
                targets.drop(victim.base)  # the load balancer's health check notices
                mark = load.answered_ok()
                load.wait_for(lambda mark=mark: load.answered_ok() >= mark + 30)  # type: ignore[misc]
        assert not load.failures, load.failures  # every request, retried, was answered 2xx
        figures = load.figures(kills_at)
        print(f"\nkilled servers under load: {figures}")
        assert figures["answered_500"] == 0
        assert figures["cut_off_in_flight"] > 0  # requests were cut off by the kills
        engine = make_engine(url)
        try:
            with httpx.Client(base_url=replicas[-1].base, timeout=30) as http:
                check_what_was_kept(load, make_sessionmaker(engine), Api(http, api_key), tenant_id)
        finally:
            engine.dispose()
