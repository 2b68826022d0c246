"""One tenant against eight, keyed deposits and withdrawals without the HTTP around them (issue 44).

The path every client money move takes, `pokna.ledger.moving.move` (the claim, the hold, one `ledger_move()`
call with COMMIT behind it: bench/ledger_posting.py's "service" writer), from `--writers` processes of one
connection each, in two shapes on one database, alternating phase by phase:

    @8, @1, @8, @1, @8, ...

`@8`: writer i moves money on the wallets of tenant i (8 tenants, `--wallets / 8` wallets each); `@1`: every
writer on one tenant's `--wallets` wallets. Each `@1` phase is divided by the mean of the `@8` phases just
before and after it, and the median of those ratios is reported. Over HTTP (bench/games_http.py
--compare-tenants) the API's CPU sets the rate and hides most of what the ledger's locks cost; here the
locks are most of it. `--durable` (default) commits synchronously, as production runs: then a chain's head
is held until the COMMIT's WAL flush, which is what one tenant's writers on one chain queue behind.

    .venv/bin/python bench/one_tenant_deposits.py [--writers 8] [--wallets 64] [--seconds 8] [--rounds 3]
        [--no-durable] [--fsync] [--colliding]

`--colliding`: the one tenant's wallets are those of `16 * --wallets` that hash to the most common chain
(about `--wallets` of them), so every two of its writers' wallets share a chain: the worst case of the
birthday spread, where keyed chains queue all eight writers on one head.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import threading
from typing import Any

import psycopg
from games_support import cpu_snapshot, cpu_used
from ledger_posting import Job, postmaster_of, prepare, service_writer
from ledger_support import median, migrated_postgres
from sqlalchemy.engine import make_url

LOCK_WAITERS = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
)


def lock_waiters(url: str, stop: threading.Event, samples: list[int]) -> None:
    """How many backends wait for a lock (a head's, a wallet's), every 20 ms until `stop`: what the CPU's
    noise on a shared machine does not blur (autocommit: each look is afresh)."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as connection:
        while not stop.wait(0.02):
            row = connection.execute(LOCK_WAITERS).fetchone()
            samples.append(int(row[0]) if row else 0)


def phase(pool: Any, jobs: list[Job], postmaster_pid: int) -> dict[str, float]:
    """Moves per second over the phase, CPU per move of the writers and of the server, and the mean number
    of writers waiting for a lock."""
    stop, samples = threading.Event(), list[int]()
    watcher = threading.Thread(target=lock_waiters, args=(jobs[0][0], stop, samples))
    watcher.start()
    before = cpu_snapshot(os.getpid(), postmaster_pid)
    results = pool.map(service_writer, jobs)
    used = cpu_used(before, cpu_snapshot(os.getpid(), postmaster_pid))
    stop.set()
    watcher.join()
    count = max(1, sum(len(result) for result in results))
    return {
        "tps": count / jobs[0][4],
        "client_cpu_ms": used["api"] * 1000 / count,
        "server_cpu_ms": used["postgres"] * 1000 / count,
        "lock_waiters": sum(samples) / max(1, len(samples)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--writers", type=int, default=8, help="writer processes, and tenants in @8")
    parser.add_argument("--wallets", type=int, default=64, help="wallets in all, split evenly in @8")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--durable", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--fsync",
        action="store_true",
        help="fsync=on too (the harness's clusters never fsync): a COMMIT waits for the disk, as in production",
    )
    parser.add_argument(
        "--colliding",
        action="store_true",
        help="the one tenant's wallets all on one chain (chain_for): its writers' keys always collide",
    )
    options = parser.parse_args()
    writers = options.writers
    fsync = "-c fsync=on" if options.fsync else ""
    with migrated_postgres(durable=options.durable, extra_options=fsync) as url:
        many = [prepare(url, options.wallets // writers) for _ in range(writers)]
        alone = prepare(url, options.wallets * (16 if options.colliding else 1))
        if options.colliding:  # keep the wallets of the chain most of them are on
            chains = [chain for _, chain, _ in alone[2]]
            common = max(set(chains), key=chains.count)
            alone = (alone[0], alone[1], [wallet for wallet in alone[2] if wallet[1] == common])
        postmaster = postmaster_of(url)

        def jobs(shape: str, seconds: float, seed: int) -> list[Job]:
            tenants = many if shape == "@8" else [alone] * writers
            return [(url, *tenants[index], seconds, seed * 100 + index) for index in range(writers)]

        phases: list[tuple[str, dict[str, float]]] = []
        with multiprocessing.get_context("spawn").Pool(writers) as pool:
            for shape in ("@8", "@1"):  # warm-up
                phase(pool, jobs(shape, 2.0, 0), postmaster)
            order = ["@8", *(shape for _ in range(options.rounds) for shape in ("@1", "@8"))]
            for index, shape in enumerate(order):
                figures = phase(pool, jobs(shape, options.seconds, index + 1), postmaster)
                phases.append((shape, figures))
                print(f"{shape} {json.dumps({k: round(v, 2) for k, v in figures.items()})}", flush=True)
    ratios = [
        figures["tps"] / statistics.mean([phases[index - 1][1]["tps"], phases[index + 1][1]["tps"]])
        for index, (shape, figures) in enumerate(phases)
        if shape == "@1"
    ]
    summary = {
        shape: {
            key: round(median([figures[key] for named, figures in phases if named == shape]), 2)
            for key in ("tps", "client_cpu_ms", "server_cpu_ms", "lock_waiters")
        }
        for shape in ("@8", "@1")
    }
    print(
        json.dumps(
            {
                "durable": options.durable,
                "colliding": options.colliding,
                "fsync": options.fsync,
                "wallets_alone": len(alone[2]),
                **summary,
                "one_over_eight_per_phase": [round(ratio, 3) for ratio in ratios],
                "one_over_eight_median": round(median(ratios), 3),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
