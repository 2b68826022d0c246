"""Does a Citus worker more add game actions/s? Each node on a CPU budget of its own (issue 45, item 6).

Starts a Citus coordinator and 4 workers on 127.0.0.1 (tests/support/citus.py's build; every node with
`synchronous_commit=on`, as production runs), each server inside a cgroup of its own with a CPU quota
(bench/cpu_budget.py: `--worker-cpus` per worker, `--coordinator-cpus` for the coordinator), so that the
workers, not the two shared cores, are the ceiling. One database per worker count (`w1`: the coordinator
and worker 1; `w2`: workers 1-2; `w4`: all four), migrated and distributed by `pokna db upgrade` with its
workers registered first (the shards spread over them), and in each `--clients` tenants chosen so that
every worker holds as many of them as the others (tenants are placed by a hash of their id). The API
(`bench/baseline_app.py`, the product app, `--api-workers` uvicorn processes, in a cgroup without a
quota, measured only) serves each database through the coordinator. Citus's query-from-any-node (every
worker has the metadata) is tried on `w4` twice: `w4-any`, an API whose URL names the 4 workers (a libpq
multi-host URL, `load_balance_hosts=random`: each connection to one of them, whatever the tenant), and
`w4-local`, an API per worker with each tenant's clients sent to the API of the worker holding the tenant
(what a tenant-aware load balancer would do).

Phases alternate, one client per tenant, every client creating games (Vigo + 2) and playing them to the
end with every action keyed (bench/citus_http.py's games):

    w1, w2, w4, w4-any, w4-local, w1, w2, ...   (after a warm-up of each)

Reported per phase and as medians over rounds: game actions/s (every `POST .../actions`), p50/p99; the
CPU of each node and of the APIs from their cgroups (cpuacct), per request (game creations and actions);
how often each node's quota throttled it (the share of 100 ms periods in which it ran out); sessions each
node started (connection churn); the load generator's CPU and what the rest of the machine used (/proc).
Errors must be 0 and every tenant's trial balance zero at the end.

    .venv/bin/python bench/citus_scaleout.py [--clients 16] [--duration 10] [--rounds 3]
        [--worker-cpus 0.1] [--coordinator-cpus 0.5] [--shapes w1,w2,w4,w4-any,w4-local] [--no-analyze]

After the warm-up every node's databases are analyzed (`--no-analyze` keeps the plans the set-up made).

Needs root and cgroups (v1's cpu and cpuacct, or v2); refuses to run without them. Every server is
stopped and every cgroup removed at the end, on an error, on Ctrl-C or SIGTERM, and after
`--time-limit` seconds at most.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import cpu_budget
from citus_http import analyze, keyed_games, seat
from cpu_budget import Budget
from games_http import RESULTS, Client, books_balance, run_phase
from games_support import percentile, serving
from scaleout_nodes import Node, balanced_tenants, new_database, start_nodes

from pokna.service_keys import load_service_keys
from pokna.settings import Settings

MAX_WORKERS = 4


@dataclass
class Shape:
    name: str  # w1, w2, w4, w4-any, w4-local
    workers: list[Node]
    clients: list[Client]
    apis: list[tuple[str, list[str]]]  # each API's base URL, and the API keys of the tenants sent there


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=16, help="one per tenant; a multiple of 4")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured phase")
    parser.add_argument("--warmup", type=float, default=4.0, help="seconds of each shape before measuring")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", default="w1,w2,w4,w4-any,w4-local")
    parser.add_argument("--worker-cpus", type=float, default=0.1, help="each worker's quota, in CPUs")
    parser.add_argument("--coordinator-cpus", type=float, default=0.5)
    parser.add_argument(
        "--weight",
        type=int,
        default=4,
        help="each node's cgroup, and the APIs', weighs as this many processes against the machine's others",
    )
    parser.add_argument("--api-workers", type=int, default=2, help="uvicorn processes per API")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--analyze",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ANALYZE every node's databases after the warm-up (default), as a server up for some minutes "
        "would be: without it the workers keep plans made on empty shards (bench/citus_http.py's analyze)",
    )
    parser.add_argument("--time-limit", type=int, default=600, help="stop everything after this long")
    parser.add_argument("--output", type=Path)
    options = parser.parse_args()
    if options.clients % MAX_WORKERS:
        parser.error(f"--clients must be a multiple of {MAX_WORKERS} (as many tenants on every worker)")
    return options


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(f"stopped by signal {signum}: cleaning up")


def main() -> int:
    options = parse_arguments()
    if (why := cpu_budget.available()) is not None:
        log(f"refusing to run: no CPU budgets can be set here ({why})")
        return 2
    shapes = [name for name in options.shapes.split(",") if name]
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGALRM, _stop)
    signal.alarm(options.time_limit)
    try:
        with ExitStack() as stack:
            result = measure(options, shapes, stack)
    finally:
        signal.alarm(0)
    shown = ("summary", "errors", "books")
    print(json.dumps({key: result[key] for key in shown}, indent=2))
    output = options.output or RESULTS / f"citus_scaleout-{datetime.now(UTC):%Y%m%d-%H%M%S}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2))
    print(f"JSON: {output}")
    return 1 if result["errors"] or result["books"] else 0


def measure(options: argparse.Namespace, names: list[str], stack: ExitStack) -> dict[str, Any]:
    nodes = start_nodes(MAX_WORKERS, stack, log)
    coordinator, workers = nodes[0], nodes[1:]
    api = Budget.create(f"pokna-bench-{os.getpid()}-api")  # no quota: measured only
    stack.callback(api.remove)
    scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pokna-scaleout-")))
    load_service_keys(Settings(data_dir=scratch / "data"))

    def serve(name: str, url: str) -> str:
        env = {
            "POKNA_DATABASE_URL": url,
            "POKNA_DATA_DIR": str(scratch / "data"),
            "POKNA_ENV": "development",
            "POKNA_LOG_LEVEL": "WARNING",
            "POKNA_RATE_LIMIT_PER_SECOND": "1000000",
            "POKNA_RATE_LIMIT_BURST": "1000000",
            # A connection for every client in both pools of each process: no connection opened and
            # closed per request beyond the pool (SQLAlchemy closes an overflow connection it gets back).
            "POKNA_DATABASE_POOL_SIZE": str(-(-options.clients // options.api_workers) + 1),
        }
        server = stack.enter_context(
            serving(env, options.api_workers, scratch / f"{name}.log", "baseline_app:create_app")
        )
        api.adopt(server.process.pid)
        return server.base_url

    databases: dict[int, tuple[str, dict[int, list[str]]]] = {}
    shapes: list[Shape] = []
    for name in names:
        count, _, route = name[1:].partition("-")
        serving_workers = workers[: int(count)]
        if int(count) not in databases:
            database = f"pokna_w{count}"
            log(f"database {database} on the coordinator and {count} worker(s), migrating")
            cluster = new_database(coordinator, serving_workers, database)
            ports = [worker.cluster.port for worker in serving_workers]
            tenants = balanced_tenants(
                cluster.url(coordinator.cluster, database), ports, options.clients // len(ports)
            )
            databases[int(count)] = (database, tenants)
        database, tenants = databases[int(count)]
        # Over the workers in turn, so that every worker has as many clients as the others.
        keys = [key for batch in zip(*tenants.values(), strict=True) for key in batch]
        if route == "local":  # an API per worker, each tenant's clients sent to its own worker's
            entries = [
                (
                    serve(f"{name}-{worker.name}", worker_url(database, [worker])),
                    tenants[worker.cluster.port],
                )
                for worker in serving_workers
            ]
        else:
            url = (
                worker_url(database, serving_workers)
                if route == "any"
                else coordinator_url(coordinator, database)
            )
            entries = [(serve(name, url), keys)]
        clients = [
            client
            for index, (base_url, batch) in enumerate(entries)
            for client in seat(base_url, batch, options.clients // len(entries), options.seed + index)
        ]
        for client in clients:
            stack.callback(client.http.close)
            stack.callback(client.reference.close)
        shapes.append(Shape(name, serving_workers, clients, entries))
        log(f"{name}: serving on {[base_url for base_url, _ in entries]}, {len(keys)} tenants")

    coordinator.budget.limit(options.coordinator_cpus)
    for worker in workers:
        worker.budget.limit(options.worker_cpus)
    for budget in [api, *(node.budget for node in nodes)]:
        budget.weigh(options.weight)
    for shape in shapes:
        phase(shape, nodes, api, options.warmup)
    if options.analyze:
        analyze(
            {
                f"postgresql+psycopg://postgres@127.0.0.1:{node.cluster.port}/{database}"
                for count, (database, _) in databases.items()
                for node in [coordinator, *workers[:count]]
            }
        )
    phases = []
    for round_number in range(options.rounds):
        for shape in shapes:
            phases.append(phase(shape, nodes, api, options.duration))
            log(json.dumps(phases[-1]))
        log(f"round {round_number + 1}/{options.rounds} done")
    books = [problem for shape in shapes for url, keys in shape.apis for problem in books_balance(url, keys)]
    return {
        "when": datetime.now(UTC).isoformat(),
        "settings": vars(options) | {"output": str(options.output)},
        "summary": summarize(phases, names),
        "errors": sum(p["errors"] for p in phases),
        "books": books,
        "phases": phases,
    }


def coordinator_url(coordinator: Node, database: str) -> str:
    return f"postgresql+psycopg://postgres@127.0.0.1:{coordinator.cluster.port}/{database}"


def worker_url(database: str, workers: list[Node]) -> str:
    """Citus's query-from-any-node: the workers as one libpq multi-host URL, each new connection to one
    of them at random (one worker: always that one)."""
    hosts = "&".join(f"host=127.0.0.1:{worker.cluster.port}" for worker in workers)
    return f"postgresql+psycopg://postgres@/{database}?{hosts}&load_balance_hosts=random"


def phase(shape: Shape, nodes: list[Node], api: Budget, seconds: float) -> dict[str, Any]:
    """`api`: the cgroup of every API process (no quota)."""
    sessions = {node.name: node.sessions() for node in nodes}
    before = {node.name: (node.budget.cpu_seconds(), node.budget.throttling()) for node in nodes}
    api_before = api.cpu_seconds()
    # run_phase's own accounting (/proc) is used for the load generator and the machine only.
    postmaster = nodes[0].postmaster_pid
    done = run_phase(shape.name, shape.clients, seconds, (postmaster, postmaster), keyed_games)
    api_cpu = api.cpu_seconds() - api_before
    after = {node.name: (node.budget.cpu_seconds(), node.budget.throttling()) for node in nodes}
    sessions = {node.name: node.sessions() - sessions[node.name] - 1 for node in nodes}
    cpu = {name: after[name][0] - before[name][0] for name in after}
    throttled = {
        name: (after[name][1].throttled - before[name][1].throttled)
        / max(1, after[name][1].periods - before[name][1].periods)
        for name in after
    }
    actions = done.action_latencies
    requests = max(1, done.requests)
    serving = [node.name for node in shape.workers]
    nodes_cpu = sum(cpu.values())
    return {
        "shape": shape.name,
        "seconds": round(done.seconds, 3),
        "actions_per_s": len(actions) / done.seconds,
        "requests_per_s": done.requests / done.seconds,
        "p50_ms": percentile(actions, 0.5) * 1e3,
        "p99_ms": percentile(actions, 0.99) * 1e3,
        # Requests are game creations and actions; the coordinator's CPU is its cgroup's (cpuacct).
        "cpu_ms_per_request": {
            "coordinator": cpu["coordinator"] * 1e3 / requests,
            "workers": sum(cpu[name] for name in serving) * 1e3 / requests,
            "api": api_cpu * 1e3 / requests,
            "loadgen": done.cpu["loadgen"] * 1e3 / requests,
        },
        "node_cpus": {name: used / done.seconds for name, used in cpu.items()},
        "throttled_share": throttled,
        "new_sessions": sessions,
        "api_cpus": api_cpu / done.seconds,
        "machine_busy_fraction": done.cpu["machine_busy"] / max(1e-9, done.cpu["machine_total"]),
        "others_cpus": max(0.0, done.cpu["machine_busy"] - api_cpu - done.cpu["loadgen"] - nodes_cpu)
        / done.seconds,
        "errors": len(done.tally.errors),
        "first_errors": done.tally.errors[:3],
    }


def summarize(phases: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    def median_of(name: str, pick: Any) -> float:
        return float(statistics.median(pick(p) for p in phases if p["shape"] == name))

    shapes = {
        name: {
            "actions_per_s": median_of(name, lambda p: p["actions_per_s"]),
            "p50_ms": median_of(name, lambda p: p["p50_ms"]),
            "coordinator_cpu_ms_per_request": median_of(
                name, lambda p: p["cpu_ms_per_request"]["coordinator"]
            ),
            "workers_cpu_ms_per_request": median_of(name, lambda p: p["cpu_ms_per_request"]["workers"]),
            "api_cpu_ms_per_request": median_of(name, lambda p: p["cpu_ms_per_request"]["api"]),
            "throttled_share": {
                node: median_of(name, lambda p, node=node: p["throttled_share"][node])
                for node in phases[0]["throttled_share"]
            },
            "others_cpus": median_of(name, lambda p: p["others_cpus"]),
        }
        for name in names
    }
    rates = {name: median_of(name, lambda p: p["actions_per_s"]) for name in names}
    ratios = {f"{name} / w1": rates[name] / rates["w1"] for name in rates if "w1" in rates and name != "w1"}
    if "w4-any" in rates and "w4" in rates:
        ratios["w4-any / w4"] = rates["w4-any"] / rates["w4"]
    return {"shapes": shapes, "ratios": ratios}


if __name__ == "__main__":
    sys.exit(main())
