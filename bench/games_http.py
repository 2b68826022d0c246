"""HTTP game throughput: N concurrent clients play whole games against `pokna serve`'s stack on PostgreSQL.

Starts a throwaway PostgreSQL cluster, migrates it, creates tenants and API keys, serves the API under
uvicorn (`bench/baseline_app.py`: the product app plus one bench-only route), funds wallets over HTTP,
and beside it the frozen outside reference (`bench/reference_app.py`: FastAPI + psycopg_pool, no
product code) with the same worker count, then alternates measured phases, a reference phase between
every two others:

    reference, games, reference, deposits, reference, baseline, reference, games, ..., reference

A games phase: every client creates a game (Vigo + `--players`, its own wallets unless
`--shared-wallets`) and plays it to the end, following `turn.allowed_actions`, then the next one.
A deposits phase: every client posts `POST /v1/accounts/{id}/deposits` of 1 with a fresh
Idempotency-Key, back to back. A baseline phase: every client sends `POST /bench/baseline` (the
product's own stack around one transaction that locks one account row and inserts one row). A
reference phase: every client sends the reference's `POST /touch` (bearer key checked against a table,
one row locked, one inserted, commit). Every phase has the same client count and lasts `--duration`
seconds (a games phase may stop earlier at `--games` games). Reported: median over phases of games/s,
actions/s (every POST /actions), deposits/s, baseline and reference requests/s, p50/p99 per request
type, the CPU each side used per request, errors (must be 0), and each phase against the mean of the
reference phases just before and after it.

    .venv/bin/python bench/games_http.py [--clients 8] [--workers 2] [--duration 10] [--rounds 3]
        [--phases games,deposits,baseline] [--games N] [--players 3] [--tenants 1 | --compare-tenants 8] [--shared-wallets] [--durable] [--seed 1] [--keep-nagle] [--no-analyze] [--output FILE]

After the warm-up the database is analyzed (`--no-analyze` keeps the plans made on the set-up's small tables).

With `--compare-tenants N` (issue 25) there are no reference phases: each phase kind runs with the
clients spread over N tenants, then with as many clients (their own wallets) all in one tenant, round after
round, and a closing N-tenant phase of each kind; each one-tenant phase is divided by the mean of the
N-tenant phases of its kind just before and after it ("one tenant against many" in the report).

Loopback only; the load generator runs on the same machine as the server and PostgreSQL. With
`--workers` > 1 the listening socket gets TCP_NODELAY (uvicorn#3149 drops it; see baseline_app.py);
`--keep-nagle` serves exactly as `pokna serve` does today, to measure that bug.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import reference_app
from baseline_app import BASELINE_PATH, create_touch_table
from games_support import (
    cpu_snapshot,
    cpu_used,
    migrated_cluster,
    percentile,
    serving,
    serving_reference,
)
from http_report import print_report, report
from sqlalchemy import text

from pokna.db.engine import make_engine
from pokna.service_keys import load_service_keys
from pokna.settings import Settings
from support.driver import new_api_key  # type: ignore[import-not-found,unused-ignore]

FUNDS = 10**11  # per wallet: no game in a run can bust anyone
MAX_ACTIONS_PER_GAME = 500
RESULTS = Path(__file__).resolve().parent / "results"


# --- the clients -----------------------------------------------------------------------------------------


@dataclass
class Client:
    """One load-generating client: a keep-alive connection with a tenant's key, and the wallets it seats."""

    http: httpx.Client
    vigo_wallet: str
    player_wallets: list[str]
    rng: random.Random
    reference: httpx.Client  # the same client's connection to the frozen reference
    reference_account: str


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    games: int = 0
    actions: int = 0
    abandoned: int = 0
    errors: list[str] = field(default_factory=list)

    def timed_post(
        self,
        http: httpx.Client,
        kind: str,
        path: str,
        body: Any,
        expected: int,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """The JSON answer, or None (the error recorded) if the request failed or had another status."""
        started = time.perf_counter()
        try:
            response = http.post(path, json=body, headers=headers)
        except httpx.HTTPError as error:
            self.errors.append(f"{kind}: {type(error).__name__}: {error}")
            return None
        self.latencies.setdefault(kind, []).append(time.perf_counter() - started)
        if response.status_code != expected:
            self.errors.append(f"{kind}: HTTP {response.status_code} {response.text[:300]}")
            return None
        return response.json()


class GameBudget:
    """At most `limit` games started in a phase, across all clients (None: no limit)."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit
        self.lock = threading.Lock()

    def take(self) -> bool:
        if self.left is None:
            return True
        with self.lock:
            if self.left <= 0:
                return False
            self.left -= 1
            return True


def next_action(game: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A plausible player: mostly split and claim, sometimes roll again or challenge."""
    turn = game["turn"]
    account = turn["account_ids"][0]
    allowed = turn["allowed_actions"]
    if "start" in allowed:
        return {"type": "start", "account_id": account}
    if "vote" in allowed:
        return {
            "type": "vote",
            "account_id": account,
            "choice": "split" if rng.random() < 0.75 else "roll_again",
        }
    if "challenge" in allowed and rng.random() < 0.25:
        return {"type": "challenge", "account_id": account}
    if "claim" in allowed:
        return {"type": "claim", "account_id": account}
    return {"type": "roll", "account_id": account}


def play_games(client: Client, deadline: float, budget: GameBudget, stake: int, keyed: bool = False) -> Tally:
    """Games to the end, one after another; with `keyed`, every action under a fresh Idempotency-Key (as an
    integrating app that retries safely sends them)."""
    tally = Tally()
    terms = {
        "vigo_account_id": client.vigo_wallet,
        "player_account_ids": client.player_wallets,
        "stake": stake,
    }
    while time.perf_counter() < deadline and budget.take():
        game = tally.timed_post(client.http, "create", "/v1/games", terms, 201)
        if game is None:
            continue
        path = f"/v1/games/{game['id']}/actions"
        for _ in range(MAX_ACTIONS_PER_GAME):
            if game["status"] in ("settled", "cancelled"):
                tally.games += 1
                break
            if time.perf_counter() >= deadline:
                tally.abandoned += 1  # left open; nothing else touches it
                break
            action = next_action(game, client.rng)
            tally.actions += 1
            key = {"Idempotency-Key": f"act-{uuid.uuid4()}"} if keyed else None
            game = tally.timed_post(client.http, action["type"], path, action, 200, key)
            if game is None:
                break
        else:
            tally.errors.append(f"game {game['id']} did not end within {MAX_ACTIONS_PER_GAME} actions")
    return tally


def touch_baseline(client: Client, deadline: float) -> Tally:
    tally = Tally()
    body = {"account_id": client.vigo_wallet}
    while time.perf_counter() < deadline:
        tally.timed_post(client.http, "baseline", BASELINE_PATH, body, 200)
    return tally


def touch_reference(client: Client, deadline: float) -> Tally:
    tally = Tally()
    body = {"account_id": client.reference_account}
    while time.perf_counter() < deadline:
        tally.timed_post(client.reference, "reference", "/touch", body, 200)
    return tally


def make_deposits(client: Client, deadline: float) -> Tally:
    tally = Tally()
    path = f"/v1/accounts/{client.vigo_wallet}/deposits"
    while time.perf_counter() < deadline:
        key = {"Idempotency-Key": f"bench-{uuid.uuid4()}"}
        tally.timed_post(client.http, "deposit", path, {"amount": 1}, 201, key)
    return tally


WORKLOADS: dict[str, Callable[[Client, float], Tally]] = {
    "reference": touch_reference,
    "baseline": touch_baseline,
    "deposits": make_deposits,
}
SINGLE_REQUEST_KINDS = {"reference": "reference", "baseline": "baseline", "deposits": "deposit"}


# --- phases ----------------------------------------------------------------------------------------------


@dataclass
class Phase:
    kind: str  # "games", or a key of WORKLOADS; with --compare-tenants, "@" and the tenant count follow
    seconds: float
    tally: Tally
    cpu: dict[str, float]
    load_1min: tuple[float, float]  # the machine's 1-minute load average when the phase began and ended

    @property
    def requests(self) -> int:
        return sum(len(samples) for samples in self.tally.latencies.values())

    @property
    def action_latencies(self) -> list[float]:
        return [
            s
            for kind, samples in self.tally.latencies.items()
            if kind not in ("create", *SINGLE_REQUEST_KINDS.values())
            for s in samples
        ]

    def rate(self, count: int) -> float:
        return count / self.seconds

    def summary(self) -> dict[str, Any]:
        requests = self.requests
        latency = {
            kind: {
                "count": len(samples),
                "p50_ms": percentile(samples, 0.5) * 1e3,
                "p99_ms": percentile(samples, 0.99) * 1e3,
            }
            for kind, samples in sorted(self.tally.latencies.items())
        }
        if self.kind.split("@")[0] == "games":
            actions = self.action_latencies
            latency["action (all types)"] = {
                "count": len(actions),
                "p50_ms": percentile(actions, 0.5) * 1e3,
                "p99_ms": percentile(actions, 0.99) * 1e3,
            }
        return {
            "kind": self.kind,
            "seconds": round(self.seconds, 3),
            "requests_per_s": self.rate(requests),
            "games_per_s": self.rate(self.tally.games),
            "actions_per_s": self.rate(self.tally.actions),
            "games": self.tally.games,
            "actions": self.tally.actions,
            "abandoned_games": self.tally.abandoned,
            "errors": len(self.tally.errors),
            "latency": latency,
            "cpu_ms_per_request": {
                group: self.cpu[group] * 1e3 / max(1, requests) for group in ("api", "postgres", "loadgen")
            },
            "machine_busy_fraction": self.cpu["machine_busy"] / max(1e-9, self.cpu["machine_total"]),
            "other_processes_fraction": self.cpu["other"] / max(1e-9, self.cpu["machine_total"]),
            "load_1min": list(self.load_1min),
        }


def run_phase(
    kind: str,
    clients: list[Client],
    seconds: float,
    pids: tuple[int, int],
    work: Callable[[Client, float], Tally],
) -> Phase:
    """`pids`: the server's and the cluster's postmaster's, for CPU accounting."""
    results: list[Tally | None] = [None] * len(clients)
    start = threading.Barrier(len(clients) + 1)
    clock: dict[str, float] = {}

    def run_client(index: int) -> None:
        start.wait()
        results[index] = work(clients[index], clock["deadline"])

    threads = [
        threading.Thread(target=run_client, args=(index,), daemon=True) for index in range(len(clients))
    ]
    for thread in threads:
        thread.start()
    load_before = os.getloadavg()[0]
    before = cpu_snapshot(*pids)
    began = time.perf_counter()
    clock["deadline"] = began + seconds
    start.wait()
    for thread in threads:
        thread.join(timeout=seconds + 120)
    ended = time.perf_counter()
    after = cpu_snapshot(*pids)
    total = Tally()
    for index, result in enumerate(results):
        if result is None:
            total.errors.append(f"client {index} did not finish")
            continue
        for request_kind, samples in result.latencies.items():
            total.latencies.setdefault(request_kind, []).extend(samples)
        total.games += result.games
        total.actions += result.actions
        total.abandoned += result.abandoned
        total.errors.extend(result.errors)
    return Phase(kind, ended - began, total, cpu_used(before, after), (load_before, os.getloadavg()[0]))


# --- set-up ----------------------------------------------------------------------------------------------


def analyze(url: str) -> None:
    """Statistics for the tables the warm-up filled, as autovacuum gives any database older than a minute.
    Without them the planner guesses: the ledger's chain-link check, for one, then scans every one of the
    tenant's journal transactions on each insert (bench/README.md, "HTTP game throughput")."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(text("ANALYZE"))
            connection.commit()
    finally:
        engine.dispose()


def create_tenants(url: str, count: int) -> list[str]:
    """API keys of `count` new tenants, made with the same service function as `pokna tenants create`."""
    engine = make_engine(url)
    try:
        create_touch_table(engine)
        return [new_api_key(engine, f"Bench cantina {index}").secret for index in range(count)]
    finally:
        engine.dispose()


def open_wallet(http: httpx.Client) -> str:
    created = http.post("/v1/accounts", json={})
    assert created.status_code == 201, created.text
    account_id: str = created.json()["id"]
    funded = http.post(
        f"/v1/accounts/{account_id}/deposits",
        json={"amount": FUNDS},
        headers={"Idempotency-Key": f"fund-{uuid.uuid4()}"},
    )
    assert funded.status_code == 201, funded.text
    return account_id


def http_client(base_url: str, api_key: str) -> httpx.Client:
    return httpx.Client(
        base_url=base_url,
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=60.0,
        trust_env=False,  # loopback only: never through a proxy from the environment
        limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
    )


REFERENCE_KEY = "reference-bench-key"


def seat_clients(
    base_url: str, reference_url: str, keys: list[str], options: argparse.Namespace
) -> list[Client]:
    clients: list[Client] = []
    shared: dict[int, tuple[str, list[str]]] = {}
    for index in range(options.clients):
        tenant = index % len(keys)
        http = http_client(base_url, keys[tenant])
        if options.shared_wallets and tenant in shared:
            vigo, seated = shared[tenant]
        else:
            vigo, seated = open_wallet(http), [open_wallet(http) for _ in range(options.players)]
            shared[tenant] = (vigo, seated)
        reference = http_client(reference_url, REFERENCE_KEY)
        clients.append(
            Client(
                http, vigo, seated, random.Random(f"{options.seed}:{index}"), reference, f"account-{index}"
            )
        )
    return clients


def books_balance(base_url: str, keys: list[str]) -> list[str]:
    """Problems with the books after the run: every tenant's trial balance must total zero."""
    problems = []
    for key in keys:
        with http_client(base_url, key) as http:
            response = http.get("/v1/ledger/trial-balance")
            if response.status_code != 200 or response.json()["total"] != 0:
                problems.append(f"trial balance: HTTP {response.status_code} {response.text[:300]}")
    return problems


# --- main ------------------------------------------------------------------------------------------------


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (threads), default 8")
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes, default 2")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured phase, default 10")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of --phases, each phase between two references"
    )
    parser.add_argument(
        "--phases",
        default="games,deposits,baseline",
        help="comma-separated phase kinds per round, of games, deposits, baseline (default all three)",
    )
    parser.add_argument("--games", type=int, default=None, help="stop a games phase after this many games")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of each kind before measuring")
    parser.add_argument("--players", type=int, default=3, help="players per game besides the Vigo, 1-11")
    parser.add_argument("--stake", type=int, default=5)
    parser.add_argument("--tenants", type=int, default=1, help="clients are spread round-robin over tenants")
    parser.add_argument(
        "--compare-tenants",
        type=int,
        default=None,
        metavar="N",
        help="issue 25: each phase twice, the clients in one tenant and spread over N; no reference phases",
    )
    parser.add_argument(
        "--shared-wallets", action="store_true", help="all of a tenant's clients seat the same wallets"
    )
    parser.add_argument(
        "--durable",
        action="store_true",
        help="synchronous_commit=on, as production runs; default: the test harness's asynchronous commit, "
        "which hides the WAL flush a COMMIT waits for under a chain's head (issue 44)",
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="seeds the players' choices (split/roll again, claim/challenge)"
    )
    parser.add_argument(
        "--analyze",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ANALYZE after the warm-up (default), as a server up for some minutes would be; --no-analyze "
        "measures the plans made on the set-up's small tables",
    )
    parser.add_argument(
        "--keep-nagle",
        action="store_true",
        help="serve with uvicorn's own multi-worker socket, as `pokna serve` does: no TCP_NODELAY (uvicorn#3149)",
    )
    parser.add_argument(
        "--factory",
        default="baseline_app:create_app",
        help="for experiments only: a `module:callable` on PYTHONPATH wrapping baseline_app.create_app",
    )
    parser.add_argument(
        "--output", type=Path, help="JSON results (default bench/results/games_http-<time>.json)"
    )
    options = parser.parse_args()
    if not 1 <= options.players <= 11 or options.clients < 1 or options.rounds < 1 or options.tenants < 1:
        parser.error("need 1-11 players, and at least one client, round and tenant")
    unknown = set(options.phases.split(",")) - {"games", *WORKLOADS} - {"reference", ""}
    if unknown:
        parser.error(f"--phases: unknown {', '.join(sorted(unknown))} (games, deposits, baseline)")
    if not 0 < options.duration <= 600:
        parser.error("--duration is 0-600 seconds")
    return options


def main() -> int:
    options = parse_arguments()
    kinds = [kind for kind in options.phases.split(",") if kind]
    with (
        migrated_cluster(durable=options.durable) as database,
        tempfile.TemporaryDirectory(prefix="pokna-bench-") as scratch,
    ):
        data_dir = Path(scratch) / "data"
        load_service_keys(Settings(data_dir=data_dir))  # development keys made once, before the workers race
        tenant_count = options.compare_tenants or options.tenants
        keys = create_tenants(database.url, tenant_count)
        reference_app.seed(
            reference_app.libpq_conninfo(database.url),
            "reference-tenant",
            REFERENCE_KEY,
            [f"account-{index}" for index in range(options.clients)],
        )
        env = {
            "POKNA_DATABASE_URL": database.url,
            "POKNA_DATA_DIR": str(data_dir),
            "POKNA_ENV": "development",
            "POKNA_LOG_LEVEL": os.environ.get("POKNA_LOG_LEVEL", "INFO"),
            # The per-key rate limiter runs (its cost is part of the floor) but never throttles the bench.
            "POKNA_RATE_LIMIT_PER_SECOND": "1000000",
            "POKNA_RATE_LIMIT_BURST": "1000000",
        }
        scratch_path = Path(scratch)
        with (
            serving(
                env, options.workers, scratch_path / "server.log", options.factory, options.keep_nagle
            ) as server,
            serving_reference(env, options.workers, scratch_path / "reference.log") as reference,
        ):
            clients = seat_clients(server.base_url, reference.base_url, keys, options)
            # --compare-tenants: the same number of clients again, all in one tenant (their own wallets).
            alone = (
                []
                if options.compare_tenants is None
                else seat_clients(server.base_url, reference.base_url, keys[:1], options)
            )
            product_pids = (server.process.pid, database.postmaster_pid)
            reference_pids = (reference.process.pid, database.postmaster_pid)

            def phase(named: str, seconds: float) -> Phase:
                kind, _, tenants_of_phase = named.partition("@")
                pids = reference_pids if kind == "reference" else product_pids
                players = alone if tenants_of_phase == "1" else clients
                if kind == "games":
                    budget = GameBudget(options.games if seconds == options.duration else None)
                    return run_phase(
                        named,
                        players,
                        seconds,
                        pids,
                        lambda client, deadline: play_games(client, deadline, budget, options.stake),
                    )
                return run_phase(named, players, seconds, pids, WORKLOADS[kind])

            print(
                f"serving on {server.base_url}, reference on {reference.base_url}; warming up",
                file=sys.stderr,
            )
            if options.compare_tenants is not None:
                phases = compared_phases(
                    phase, lambda: analyze(database.url) if options.analyze else None, kinds, options
                )
            else:
                for kind in ("reference", *kinds):
                    phase(kind, options.warmup)
                if options.analyze:
                    analyze(database.url)
                phases = [phase("reference", options.duration)]
                for round_number in range(options.rounds):
                    for kind in kinds:
                        phases.append(phase(kind, options.duration))
                        phases.append(phase("reference", options.duration))
                    print(f"round {round_number + 1}/{options.rounds} done", file=sys.stderr)
            problems = books_balance(server.base_url, keys)
            for client in clients + alone:
                client.http.close()
                client.reference.close()
        result = report(
            [p.summary() for p in phases],
            settings(options),
            {"nproc": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
            problems,
            [error for p in phases for error in p.tally.errors][:10],
        )
    print_report(result)
    output = options.output or RESULTS / f"games_http-{datetime.now(UTC):%Y%m%d-%H%M%S}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2))
    print(f"\nJSON: {output}")
    return 1 if result["errors"] else 0


def compared_phases(
    phase: Callable[[str, float], Phase],
    after_warmup: Callable[[], None],
    kinds: list[str],
    options: argparse.Namespace,
) -> list[Phase]:
    """Issue 25: per round and kind, the clients spread over N tenants, then the same number in one; a
    closing N-tenant phase of each kind, so that every one-tenant phase has a neighbour on both sides."""
    many = f"@{options.compare_tenants}"
    for kind in kinds:
        phase(kind + many, options.warmup)
        phase(kind + "@1", options.warmup)
    after_warmup()
    phases = []
    for round_number in range(options.rounds):
        for kind in kinds:
            phases.append(phase(kind + many, options.duration))
            phases.append(phase(kind + "@1", options.duration))
        print(f"round {round_number + 1}/{options.rounds} done", file=sys.stderr)
    phases.extend(phase(kind + many, options.duration) for kind in kinds)
    return phases


def settings(options: argparse.Namespace) -> dict[str, Any]:
    return {
        "clients": options.clients,
        "workers": options.workers,
        "duration_s": options.duration,
        "rounds": options.rounds,
        "phases": options.phases,
        "games_cap": options.games,
        "players_per_game": options.players,
        "tenants": options.tenants,
        "compare_tenants": options.compare_tenants,
        "shared_wallets": options.shared_wallets,
        "durable": options.durable,
        "seed": options.seed,
        "log_level": os.environ.get("POKNA_LOG_LEVEL", "INFO"),
        "factory": options.factory,
        "keep_nagle": options.keep_nagle,
        "analyze": options.analyze,
    }


if __name__ == "__main__":
    sys.exit(main())
