"""The scale-out bench's Citus nodes: a coordinator and workers, each in a CPU budget of its own
(bench/cpu_budget.py), committing synchronously as production runs; one database per worker count, and
tenants chosen so that every worker of a database holds as many of them as the others."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass

import games_support  # noqa: F401  (puts tests/ on sys.path for support.*)
import psycopg
from cpu_budget import Budget
from sqlalchemy import text

from pokna.db import migrate
from pokna.db.engine import make_engine
from support.citus import SERVER_OPTIONS, CitusCluster, citus_bindir  # type: ignore[import-not-found,unused-ignore]
from support.driver import new_api_key  # type: ignore[import-not-found,unused-ignore]
from support.postgres import Cluster, start_cluster  # type: ignore[import-not-found,unused-ignore]
from support.sessions import make_sessionmaker, unit_of_work  # type: ignore[import-not-found,unused-ignore]

# The shards of every tenant-owned table follow journal_transaction's (one colocation group).
_WORKER_OF_TENANT = text(
    "SELECT nodeport FROM pg_dist_shard_placement "
    "WHERE shardid = get_shard_id_for_distribution_column('journal_transaction', CAST(:tenant AS text))"
)
_SHARDS_PER_WORKER = text(
    "SELECT nodeport, count(*) FROM pg_dist_shard_placement JOIN pg_dist_shard USING (shardid) "
    "WHERE logicalrelid = 'journal_transaction'::regclass GROUP BY nodeport"
)


@dataclass(frozen=True)
class Node:
    name: str
    cluster: Cluster
    budget: Budget

    @property
    def postmaster_pid(self) -> int:
        return int((self.cluster.data / "postmaster.pid").read_text().split()[0])

    def sessions(self) -> int:
        """Sessions the server has started so far, in every database (a new connection costs its
        server a process and Citus's set-up: churn shows here)."""
        with psycopg.connect(
            host="127.0.0.1", port=self.cluster.port, user="postgres", dbname="postgres"
        ) as db:
            row = db.execute("SELECT sum(sessions)::bigint FROM pg_stat_database").fetchone()
        return int(row[0]) if row else 0


def start_nodes(workers: int, stack: ExitStack, log: Callable[[str], None]) -> list[Node]:
    """The coordinator, then the workers; each server started inside its cgroup, no quota yet (the set-up
    runs at full speed). `stack` stops every server, then removes every cgroup."""
    bindir = citus_bindir()
    nodes = []
    for name in ["coordinator", *(f"worker{index + 1}" for index in range(workers))]:
        budget = Budget.create(f"pokna-bench-{os.getpid()}-{name}")
        stack.callback(_remove, budget, log)
        cluster = start_cluster(durable=True, extra_options=SERVER_OPTIONS, bindir=bindir)
        stack.callback(cluster.stop)
        # Started once by the harness; started again through the cgroup, so that every process is in it.
        cluster.halt()
        cluster.as_user = [*budget.launcher(), *cluster.as_user]
        cluster.restart()
        node = Node(name, cluster, budget)
        if node.postmaster_pid not in budget.pids():
            raise RuntimeError(f"{name}'s postmaster is not in its cgroup {budget.folders}")
        nodes.append(node)
        log(f"{name}: port {cluster.port}, cgroup {budget.folders[0]}")
    return nodes


def _remove(budget: Budget, log: Callable[[str], None]) -> None:
    for problem in budget.remove():
        log(f"could not remove a cgroup: {problem}")


def new_database(coordinator: Node, workers: list[Node], name: str) -> CitusCluster:
    """A database on the coordinator and `workers` only, migrated and distributed (`pokna db upgrade`);
    the workers registered before, so the shards are spread over all of them from the start."""
    cluster = CitusCluster(coordinator=coordinator.cluster, workers=[worker.cluster for worker in workers])
    url = cluster.new_database(name)
    migrate.upgrade(url)
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            shards: dict[int, int] = dict(connection.execute(_SHARDS_PER_WORKER).tuples().all())
    finally:
        engine.dispose()
    if sorted(shards) != sorted(worker.cluster.port for worker in workers):
        raise RuntimeError(f"{name}: shards per worker port {shards}, not spread over every worker")
    return cluster


def balanced_tenants(url: str, worker_ports: list[int], per_worker: int) -> dict[int, list[str]]:
    """API keys of `per_worker` tenants on each worker, by the worker's port (tenants are placed by a hash
    of their id: new ones are made until each worker has its share; the others stay idle)."""
    engine = make_engine(url)
    chosen: dict[int, list[str]] = {port: [] for port in worker_ports}
    try:
        with unit_of_work(make_sessionmaker(engine)) as session:
            for attempt in range(50 * len(worker_ports) * per_worker):
                if all(len(keys) >= per_worker for keys in chosen.values()):
                    break
                issued = new_api_key(engine, f"Scale-out cantina {attempt}")
                port = session.execute(_WORKER_OF_TENANT, {"tenant": issued.tenant_id}).scalar_one()
                if len(chosen[port]) < per_worker:
                    chosen[port].append(issued.secret)
            else:
                raise RuntimeError(f"tenants per worker port: { {p: len(k) for p, k in chosen.items()} }")
    finally:
        engine.dispose()
    return chosen
