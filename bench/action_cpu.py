"""What each millisecond of a game action's API CPU is: the product's ASGI app called directly on uvloop
(no HTTP server, no test client, no threads in between: what a uvicorn worker runs after httptools has
parsed the request), one client playing games on a throwaway cluster, sequentially.

Two passes over the same kind of games: one unprofiled, CPU time (process_time) per request, the figure
to quote; one under cProfile, whose own time per function is summed by where the function lives (the
categories below) and scaled to the unprofiled total, so the table reads in milliseconds of the real
request (the profiler inflates small functions most: the scaled split is an estimate, its total is not).
With `--statements`, pg_stat_statements (when the cluster has it) gives PostgreSQL's execution time per
statement over the unprofiled pass.

    .venv/bin/python bench/action_cpu.py [--games 150] [--keyed] [--profile action|create|deposit] [--top 25]
        [--statements] [--deposits 300] [--no-profile] [--no-analyze] [--dump FILE]

`--deposits N` adds N keyed deposits (each with its own Idempotency-Key, as the API requires) timed the
same way, after the games; `--no-profile` skips the profiled pass; `--bursts` (bench/cpu_ab.py) plays
`--games` games and `--deposits` deposits per line read and prints their mean CPU, until its input ends.
After the warm-up (20 games, and 20 deposits with `--deposits`) the database is analyzed: without it the
PostgreSQL figures are of plans made on the set-up's small tables (`--no-analyze` keeps those).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import random
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvloop
from games_http import analyze, create_tenants, next_action
from games_support import cpu_snapshot, cpu_used, migrated_cluster
from sqlalchemy import create_engine, text

from pokna.service_keys import load_service_keys
from pokna.settings import Settings

# (category, test on the function's file and name), first match wins.
CATEGORIES: list[tuple[str, Callable[[str, str], bool]]] = [
    ("driver (psycopg, its pool)", lambda f, n: "/psycopg" in f),
    ("rules (pokna_verify.game)", lambda f, n: "/pokna_verify/game/" in f),
    ("rolls, seeds, receipts, proofs (pokna_verify.fairness)", lambda f, n: "/pokna_verify/fairness/" in f),
    ("RFC 8785, signatures (pokna_verify.crypto)", lambda f, n: "/pokna_verify/crypto/" in f),
    ("ledger documents (pokna.ledger)", lambda f, n: "/pokna/ledger/" in f),
    ("dealer: decide, records, announcements (pokna.dealer)", lambda f, n: "/pokna/dealer/" in f),
    ("outbox events (pokna.outbox)", lambda f, n: "/pokna/outbox/" in f),
    ("idempotency claim (pokna.idempotency)", lambda f, n: "/pokna/idempotency/" in f),
    ("kernel: edge middleware, auth, gate, deps (pokna.api, pokna.db)", lambda f, n: "/pokna/" in f),
    ("pydantic (request parse, answer models, dump)", lambda f, n: "pydantic" in f),
    ("FastAPI: routing, dependency solving, params", lambda f, n: "/fastapi/" in f),
    ("Starlette: routing, request, response", lambda f, n: "/starlette/" in f),
    ("JSON (json module, C encoder/decoder)", lambda f, n: "/json/" in f or "json" in n.lower()),
    (
        "hashing, HMAC, Ed25519, secrets (C)",
        lambda f, n: any(word in n for word in ("sha256", "hmac", "digest", "sign", "token_", "urandom")),
    ),
    ("asyncio / uvloop event loop", lambda f, n: "asyncio" in f or "uvloop" in f or "anyio" in f),
    ("logging, contextvars, metrics", lambda f, n: "logging" in f or "prometheus" in f),
]


def category(filename: str, name: str) -> str:
    for label, test in CATEGORIES:
        if test(filename, name):
            return label
    return "other (builtins, dataclasses, typing, datetime, ...)"


class Driver:
    """ASGI requests to the app, as uvicorn hands them over."""

    def __init__(self, app: Any, key: str, state: dict[str, Any]) -> None:
        self.app = app
        self.key = key
        self.state = state

    async def post(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
        data = json.dumps(body).encode()
        raw = [
            (b"host", b"bench"),
            (b"authorization", f"Bearer {self.key}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()),
            *((name.lower().encode(), value.encode()) for name, value in (headers or {}).items()),
        ]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": raw,
            "client": ("127.0.0.1", 40000),
            "server": ("127.0.0.1", 8000),
            "state": dict(self.state),
        }
        sent = False
        status = 0
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": data, "more_body": False}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        if status >= 300:
            raise RuntimeError(f"{path}: {status} {b''.join(chunks)[:300]!r}")
        return json.loads(b"".join(chunks))


async def run(options: argparse.Namespace, url: str, key: str, postmaster_pid: int) -> None:
    from baseline_app import create_app

    app = create_app()
    async with app.router.lifespan_context(app) as state:
        driver = Driver(app, key, dict(state or {}))
        wallets = []
        for _ in range(4):
            account = (await driver.post("/v1/accounts", {}))["id"]
            await driver.post(
                f"/v1/accounts/{account}/deposits",
                {"amount": 10_000_000},
                {"Idempotency-Key": f"fund-{uuid.uuid4()}"},
            )
            wallets.append(account)
        terms = {"vigo_account_id": wallets[0], "player_account_ids": wallets[1:], "stake": 5}
        rng = random.Random(1)

        async def play(
            games: int,
            keyed: bool,
            timed: list[float],
            creates: list[float],
            profiler: cProfile.Profile | None = None,
            profile_kind: str = "action",
        ) -> None:
            for _ in range(games):
                headers = {"Idempotency-Key": f"c-{uuid.uuid4()}"} if keyed else None
                profiling = profiler if profile_kind == "create" else None
                started = time.process_time()
                if profiling is not None:
                    profiling.enable()
                game = await driver.post("/v1/games", terms, headers)
                if profiling is not None:
                    profiling.disable()
                creates.append(time.process_time() - started)
                while game["status"] not in ("settled", "cancelled"):
                    action = next_action(game, rng)
                    headers = {"Idempotency-Key": f"a-{uuid.uuid4()}"} if keyed else None
                    profiling = profiler if profile_kind == "action" else None
                    started = time.process_time()
                    if profiling is not None:
                        profiling.enable()
                    game = await driver.post(f"/v1/games/{game['id']}/actions", action, headers)
                    if profiling is not None:
                        profiling.disable()
                    timed.append(time.process_time() - started)

        await play(20, options.keyed, [], [])  # warm: prepared statements, caches, the pool
        await deposit(driver, wallets, 20 if options.deposits else 0)
        if options.analyze:
            analyze(url)
        if options.bursts:
            await bursts(options, driver, play, wallets, postmaster_pid)
            return
        reset_statements(url)
        actions: list[float] = []
        creates: list[float] = []
        before = cpu_snapshot(os.getpid(), postmaster_pid)
        await play(options.games, options.keyed, actions, creates)
        server_cpu = cpu_used(before, cpu_snapshot(os.getpid(), postmaster_pid))["postgres"]
        statements = read_statements(url) if options.statements else []
        per_action = sum(actions) / len(actions) * 1e3
        per_create = sum(creates) / len(creates) * 1e3
        print(
            f"{len(actions)} actions in {options.games} games ({'keyed' if options.keyed else 'unkeyed'}): "
            f"API CPU {per_action:.3f} ms an action, {per_create:.3f} ms a creation "
            f"({per_action + per_create / (len(actions) / options.games):.3f} ms an action with its "
            "share of the creation)"
        )
        print(
            f"PostgreSQL CPU (all its processes, user + system): {server_cpu / len(actions) * 1e3:.3f} ms an "
            "action with its share of the creation"
        )
        print_statements(statements, len(actions), "action, its game's creation shared out", options.top)
        if options.deposits:
            reset_statements(url)
            moved = await deposit(driver, wallets, options.deposits)
            print(f"{len(moved)} keyed deposits: API CPU {sum(moved) / len(moved) * 1e3:.3f} ms a deposit")
            print_statements(
                read_statements(url) if options.statements else [], len(moved), "deposit", options.top
            )
        if options.no_profile:
            return
        profiler = cProfile.Profile(time.process_time)  # CPU, as the unprofiled figures
        profiled: dict[str, list[float]] = {"action": [], "create": []}
        if options.profile == "deposit":
            profiled["deposit"] = await deposit(driver, wallets, options.deposits or 300, profiler)
            print(f"\nProfiled: {len(profiled['deposit'])} more keyed deposits.")
        else:
            await play(
                options.games,
                options.keyed,
                profiled["action"],
                profiled["create"],
                profiler,
                options.profile,
            )
            print(f"\nProfiled: the {options.profile} requests of {options.games} more games.")
        report(profiler, options, len(profiled[options.profile]))
        print(f"  per request kind, unprofiled: action {per_action:.3f} ms, creation {per_create:.3f} ms")


def print_statements(statements: list[tuple[str, int, float, int]], count: int, label: str, top: int) -> None:
    """pg_stat_statements over `count` requests: executor time, calls and shared buffers per request (calls
    and buffers do not move with the machine's load; the time does)."""
    if not statements:
        return
    total = sum(row[2] for row in statements if not row[0].startswith("(inside)"))
    print(f"\nPostgreSQL per {label} (pg_stat_statements, {count} requests): ms, calls, buffers")
    for query, calls, total_ms, buffers in statements[: 3 * top]:
        print(f"{total_ms / count:8.3f} {calls / count:6.2f}x {buffers / count:7.1f}  {query[:100]}")
    inside = [row for row in statements if row[0].startswith("(inside)")]
    print(
        f"{total / count:8.3f} ms the top-level statements' executor time (not parse, plan, the protocol, "
        "commit's WAL flush or the backend's idle loop; the statements inside the PL/pgSQL functions are part "
        f"of their caller's), {sum(row[1] for row in inside) / count:.2f} statements inside functions "
        "and triggers"
    )


async def deposit(
    driver: Driver, wallets: list[str], count: int, profiler: cProfile.Profile | None = None
) -> list[float]:
    """`count` keyed deposits of 1 (each under a fresh Idempotency-Key, as the API requires): CPU each."""
    moved: list[float] = []
    for number in range(count):
        fresh = {"Idempotency-Key": f"d-{uuid.uuid4()}"}
        started = time.process_time()
        if profiler is not None:
            profiler.enable()
        await driver.post(f"/v1/accounts/{wallets[1 + number % 3]}/deposits", {"amount": 1}, fresh)
        if profiler is not None:
            profiler.disable()
        moved.append(time.process_time() - started)
    return moved


async def bursts(
    options: argparse.Namespace, driver: Driver, play: Any, wallets: list[str], postmaster_pid: int
) -> None:
    """For bench/cpu_ab.py: one burst per line read (`--games` games, then `--deposits` deposits), its
    mean CPU per request kind printed as a JSON line, until the input ends; `postgres`: the cluster's CPU
    over the games, per action with the creations shared out."""
    print(json.dumps({"ready": True}), flush=True)
    while sys.stdin.readline():
        actions: list[float] = []
        creates: list[float] = []
        before = cpu_snapshot(os.getpid(), postmaster_pid)
        await play(options.games, options.keyed, actions, creates)
        server = cpu_used(before, cpu_snapshot(os.getpid(), postmaster_pid))["postgres"]
        moved = await deposit(driver, wallets, options.deposits)
        burst = {"action": actions, "creation": creates, "deposit": moved}
        means = {kind: 1e3 * sum(cpu) / len(cpu) for kind, cpu in burst.items() if cpu}
        print(json.dumps({**means, "postgres": 1e3 * server / len(actions)}), flush=True)


def report(profiler: cProfile.Profile, options: argparse.Namespace, requests: int) -> None:
    """Own time by category. A builtin's or the standard library's own time (isinstance, dict.get, enum,
    datetime, dataclasses, ...) is given to the categories of the functions that called it, in proportion
    to the time each call site spent in it, up to a few levels: it is their work."""
    if options.dump:
        profiler.dump_stats(options.dump)
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    memo: dict[Any, dict[str, float]] = {}

    def shares(function: Any, depth: int) -> dict[str, float]:
        """How `function`'s time divides between categories (fractions summing to 1)."""
        if function in memo:
            return memo[function]
        filename, _line, name = function
        label = category(filename, name)
        callers = stats[function][4] if function in stats else {}
        if not label.startswith("other") or depth == 0 or not callers:
            memo[function] = {label: 1.0}
            return memo[function]
        memo[function] = {label: 1.0}  # a cycle resolves to itself
        spent = sum(entry[2] for entry in callers.values()) or 1.0
        result: dict[str, float] = defaultdict(float)
        for caller, entry in callers.items():
            for caller_label, part in shares(caller, depth - 1).items():
                result[caller_label] += part * entry[2] / spent
        memo[function] = dict(result)
        return memo[function]

    by_category: dict[str, float] = defaultdict(float)
    by_function: list[tuple[float, str]] = []
    total = 0.0
    for function, (_cc, _nc, tottime, _ct, _callers) in stats.items():
        for label, part in shares(function, 4).items():
            by_category[label] += tottime * part
        by_function.append((tottime, f"{function[0].rsplit('/', 2)[-1]}:{function[2]}"))
        total += tottime
    calls = sum(entry[1] for entry in stats.values())
    per_game = "" if options.profile == "deposit" else f"{calls / options.games:,.0f} a game, "
    print(
        f"\nPython function calls under the profiler: {per_game}{calls / requests:,.0f} a request "
        f"({requests} {options.profile} requests; the games' dice decide how many actions a game takes)"
    )
    print("\nWhere it goes (cProfile own time by where each function lives; share of the profiled total):")
    for label, seconds in sorted(by_category.items(), key=lambda item: -item[1]):
        print(f"{100 * seconds / total:5.1f}%  {label}")
    print(f"\nTop functions by own time ({options.games} games):")
    for seconds, name in sorted(by_function, reverse=True)[: options.top]:
        print(f"{100 * seconds / total:5.1f}%  {name}")


def reset_statements(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"))
            connection.execute(text("SELECT pg_stat_statements_reset()"))
    except Exception as error:
        print(f"(no pg_stat_statements: {str(error).splitlines()[0]})")
    finally:
        engine.dispose()


def read_statements(url: str) -> list[tuple[str, int, float, int]]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT CASE WHEN toplevel THEN '' ELSE '(inside) ' END || query, calls, total_exec_time, "
                    "shared_blks_hit + shared_blks_read "
                    "FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' "
                    "ORDER BY toplevel DESC, total_exec_time DESC"
                )
            ).all()
        return [
            (" ".join(str(query).split()), int(calls), float(ms), int(buffers))
            for query, calls, ms, buffers in rows
        ]
    except Exception:
        return []
    finally:
        engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=150)
    parser.add_argument("--keyed", action="store_true", help="an Idempotency-Key on every request")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--profile", choices=["action", "create", "deposit"], default="action")
    parser.add_argument("--statements", action="store_true", help="PostgreSQL time per statement")
    parser.add_argument("--deposits", type=int, default=0, help="keyed deposits to time after the games")
    parser.add_argument("--no-profile", action="store_true", help="the unprofiled figures only")
    parser.add_argument(
        "--analyze",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ANALYZE after the warm-up (default); --no-analyze keeps the plans made on the set-up's small tables",
    )
    parser.add_argument("--bursts", action="store_true", help="for bench/cpu_ab.py: bursts on demand (stdin)")
    parser.add_argument("--dump", type=Path, help="write the profile there too (pstats), to read with pstats")
    options = parser.parse_args()
    preload = (
        "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
        if options.statements
        else ""
    )
    with migrated_cluster(preload) as database, tempfile.TemporaryDirectory(prefix="pokna-cpu-") as scratch:
        data_dir = Path(scratch) / "data"
        load_service_keys(Settings(data_dir=data_dir))
        (key,) = create_tenants(database.url, 1)
        os.environ.update(
            {
                "POKNA_DATABASE_URL": database.url,
                "POKNA_DATA_DIR": str(data_dir),
                "POKNA_ENV": "development",
                "POKNA_LOG_LEVEL": "WARNING",
                "POKNA_RATE_LIMIT_PER_SECOND": "0",
            }
        )
        uvloop.run(run(options, database.url, key, database.postmaster_pid))
    return 0


if __name__ == "__main__":
    sys.exit(main())
