"""The API CPU of the admin side's keyed writes, in process, for any checkout: opening a wallet
(`POST /v1/accounts`), the tenant's default rake (`PUT /v1/tenant/settings`), each under a fresh
Idempotency-Key, and a replay of a key already answered. The app's ASGI call on uvloop, as
bench/action_cpu.py times an action: CPU time of the whole process (`process_time`, every thread: a tree
whose writes ran on a thread pool pays for it here too) per request, after a warm-up, the database analyzed.

    .venv/bin/python bench/admin_write_cpu.py --tree TREE [--tree TREE2 ...] [--rounds 5] [--writes 200]

Each tree (a checkout's root: `git archive <commit> | tar -x -C <dir>`) runs in a process of its own on
its own throwaway cluster, with its own `bench/` for the set-up (as bench/cpu_ab.py does); the trees take
turns, round by round, so a shared machine's load weighs on each alike. Prints each tree's median per
request kind over the rounds and the ratio of the later trees to the first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

KINDS = ("wallet", "settings", "replay")


async def request(
    app: Any, state: dict[str, Any], key: str, method: str, path: str, body: Any, idem: str
) -> int:
    data = json.dumps(body).encode()
    headers = [
        (b"host", b"bench"),
        (b"authorization", f"Bearer {key}".encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"idempotency-key", idem.encode()),
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
        "state": dict(state),
    }
    sent = False
    status = 0

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

    await app(scope, receive, send)
    if status >= 300:
        raise RuntimeError(f"{method} {path}: {status}")
    return status


async def serve(key: str, url: str, writes: int) -> None:
    """Reads a line per round on stdin, answers with the round's CPU per request kind (ms) as JSON."""
    from baseline_app import create_app  # the tree's bench
    from games_http import analyze

    app = create_app()
    async with app.router.lifespan_context(app) as lifespan:
        state = dict(lifespan or {})
        replayed = f"admin-{uuid.uuid4()}"
        await request(app, state, key, "POST", "/v1/accounts", {}, replayed)

        async def kind(name: str, count: int) -> float:
            started = time.process_time()
            for number in range(count):
                if name == "wallet":
                    await request(app, state, key, "POST", "/v1/accounts", {}, f"admin-{uuid.uuid4()}")
                elif name == "settings":
                    body = {"rake": {"bps": 100 + number % 400, "cap": 50}}
                    await request(
                        app, state, key, "PUT", "/v1/tenant/settings", body, f"admin-{uuid.uuid4()}"
                    )
                else:
                    await request(app, state, key, "POST", "/v1/accounts", {}, replayed)
            return 1e3 * (time.process_time() - started) / count

        for name in KINDS:  # the warm-up, then statistics as autovacuum would give them
            await kind(name, 50)
        analyze(url)
        print(json.dumps({"ready": True}), flush=True)
        loop = asyncio.get_running_loop()
        while await loop.run_in_executor(None, sys.stdin.readline):
            print(json.dumps({name: await kind(name, writes) for name in KINDS}), flush=True)


def worker(tree: Path, writes: int) -> None:
    for part in ("bench", "verifier", "service"):
        sys.path.insert(0, str(tree / part))
    import uvloop
    from games_http import create_tenants
    from games_support import migrated_cluster

    from pokna.service_keys import load_service_keys
    from pokna.settings import Settings

    with migrated_cluster("") as database, tempfile.TemporaryDirectory(prefix="pokna-admin-") as scratch:
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
        uvloop.run(serve(key, database.url, writes))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tree", type=Path, action="append", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:
        worker(options.worker.resolve(), options.writes)
        return 0
    workers = []
    for tree in options.tree:
        command = [
            sys.executable,
            __file__,
            "--tree",
            str(tree),
            "--worker",
            str(tree),
            "--writes",
            str(options.writes),
        ]
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None
        while json.loads(process.stdout.readline()) != {"ready": True}:
            pass
        workers.append(process)
    figures: list[dict[str, list[float]]] = [{name: [] for name in KINDS} for _ in workers]
    for _ in range(options.rounds):
        for process, figure in zip(workers, figures, strict=True):
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.write("\n")
            process.stdin.flush()
            for name, ms in json.loads(process.stdout.readline()).items():
                figure[name].append(ms)
    for process in workers:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=120)
    print(f"{options.rounds} rounds of {options.writes} requests per kind, API CPU per request (median, ms):")
    for name in KINDS:
        medians = [statistics.median(figure[name]) for figure in figures]
        ratios = ", ".join(f"{median / medians[0]:.2f}x" for median in medians[1:])
        print(
            f"  {name}: "
            + " -> ".join(f"{median:.3f}" for median in medians)
            + (f" ({ratios})" if ratios else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
