"""The end-of-run check that no PostgreSQL server of the run is left (tests/support/leftovers.py) sees a
server the run started while it runs, and no longer once it is stopped; a server of another run is not
this run's."""

from __future__ import annotations

import os

from support.leftovers import RUN_ENV, servers_left
from support.postgres import start_cluster


def test_a_server_the_run_started_is_seen_until_it_is_stopped() -> None:
    run = os.environ[RUN_ENV]
    cluster = start_cluster()
    try:
        left = servers_left(run, expected=set(), wait_seconds=0)
        assert str(cluster.data.resolve()) in {os.path.realpath(data) for data in left.values()}
        assert servers_left("another-run", expected=set(), wait_seconds=0) == {}
        expected = {str(cluster.data.resolve())}
        assert (
            str(cluster.data.resolve()) not in servers_left(run, expected=expected, wait_seconds=0).values()
        )
    finally:
        cluster.stop()
    assert str(cluster.data.resolve()) not in {
        os.path.realpath(data) for data in servers_left(run, expected=set(), wait_seconds=0).values()
    }
