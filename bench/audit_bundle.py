"""Audit bundle verification speed: games played over HTTP (in-process app, the embedded PostgreSQL in
a temporary directory), the bundle fetched from GET /v1/audit/bundle, then `verify_bundle` timed with 1 and 2 worker
processes, and offline roll checking (pokna_verify.fairness.protocol.roll) timed on its own.

    .venv/bin/python bench/audit_bundle.py --games 300
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fastapi.testclient import TestClient

from pokna.app import create_app
from pokna.db import embedded
from pokna.db.engine import make_engine
from pokna.db.migrate import upgrade
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from pokna_verify.bundle.scan import verify_bundle
from pokna_verify.fairness.protocol import roll
from support.game_play import Api, new_tenant_key, play, random_policy
from support.sessions import make_sessionmaker  # type: ignore[import-not-found,unused-ignore]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        cluster = embedded.cluster_of(Path(directory) / "data")
        cluster.ensure_running()
        url = cluster.url
        upgrade(url)
        settings = Settings(env=Environment.TEST, data_dir=Path(directory) / "data", database_url=url)
        engine = make_engine(url)
        runtime = Runtime.from_settings(settings)
        with TestClient(create_app(settings, runtime)) as client:
            api = Api(client, new_tenant_key(make_sessionmaker(engine)))
            rng = random.Random(1)
            wallets = [api.wallet(100_000) for _ in range(12)]
            started = time.perf_counter()
            for _ in range(args.games):
                seats = rng.sample(wallets, 4)
                play(
                    [api],
                    api.create_game(seats[0], seats[1:], stake=5),
                    random_policy(rng, cancel_chance=0.0),
                )
            print(f"played {args.games} games in {time.perf_counter() - started:.1f} s")
            lines = client.get("/v1/audit/bundle", headers=api.headers).text.splitlines(keepends=True)
            ring = api.key_ring()
        engine.dispose()
        cluster.stop()
    for processes in (1, 2):
        started = time.perf_counter()
        report = verify_bundle(lines, keys=ring, processes=processes)
        seconds = time.perf_counter() - started
        assert report.findings == [], report.to_json()
        print(
            f"processes={processes}: {len(lines)} records, {report.transactions} transactions, {report.postings} "
            f"postings, {sum(report.games.values())} games, {report.rolls} rolls in {seconds:.2f} s: "
            f"{report.postings / seconds:,.0f} postings/s, {report.rolls / seconds:,.0f} rolls/s "
            f"(with every other check), {sum(report.games.values()) / seconds:,.0f} games/s"
        )
    seed, client_seed = "ab" * 32, "cd" * 32
    started = time.perf_counter()
    for nonce in range(200_000):
        roll(seed, client_seed, nonce)
    print(
        f"pokna_verify.fairness.protocol.roll alone: {200_000 / (time.perf_counter() - started):,.0f} rolls/s, one core"
    )
    print(
        f"peak memory (max RSS of this process): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )


if __name__ == "__main__":
    main()
