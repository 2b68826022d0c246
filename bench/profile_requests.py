"""Where a request's API CPU goes, in-process (yappi, CPU clock, every thread): one client plays games,
makes keyed deposits and baseline requests through the product app on a throwaway cluster (see
bench/round_trips.py), profiled per request kind. The profiler inflates every figure: read shares.

    .venv/bin/python bench/profile_requests.py --kind action [--games 40] [--top 45]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import uuid
from pathlib import Path

import yappi  # type: ignore[import-untyped,unused-ignore]
from games_http import create_tenants, next_action
from games_support import migrated_cluster
from round_trips import funded_wallets, served

from pokna.service_keys import load_service_keys
from pokna.settings import Settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kind", choices=["action", "deposit", "baseline"], default="action")
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--top", type=int, default=45)
    options = parser.parse_args()
    with migrated_cluster() as database, tempfile.TemporaryDirectory(prefix="pokna-prof-") as scratch:
        data_dir = Path(scratch) / "data"
        load_service_keys(Settings(data_dir=data_dir))
        (key,) = create_tenants(database.url, 1)
        with served(database.url, data_dir) as (client, _counts):
            client.headers["Authorization"] = f"Bearer {key}"
            wallets = funded_wallets(client, 4)
            rng = random.Random(1)
            terms = {"vigo_account_id": wallets[0], "player_account_ids": wallets[1:], "stake": 5}

            def run(profile: bool) -> int:
                count = 0
                if options.kind == "action":
                    for _ in range(options.games):
                        game = client.post("/v1/games", json=terms).json()
                        while game["status"] not in ("settled", "cancelled"):
                            action = next_action(game, rng)
                            if profile:
                                yappi.start()
                            game = client.post(f"/v1/games/{game['id']}/actions", json=action).json()
                            if profile:
                                yappi.stop()
                            count += 1
                    return count
                body: dict[str, object]
                for _ in range(options.requests):
                    if options.kind == "deposit":
                        path, body = f"/v1/accounts/{wallets[0]}/deposits", {"amount": 1}
                        headers = {"Idempotency-Key": f"p-{uuid.uuid4()}"}
                    else:
                        path, body, headers = "/bench/baseline", {"account_id": wallets[0]}, {}
                    if profile:
                        yappi.start()
                    client.post(path, json=body, headers=headers).raise_for_status()
                    if profile:
                        yappi.stop()
                    count += 1
                return count

            run(False)  # warm-up
            yappi.set_clock_type("cpu")
            yappi.start()
            yappi.stop()
            n = run(True)
    stats = yappi.get_func_stats()
    total = sum(thread.ttot for thread in yappi.get_thread_stats())
    print(f"{n} {options.kind} requests, {total / n * 1e3:.2f} ms CPU each under the profiler (all threads)")
    rows = sorted(stats, key=lambda s: s.ttot, reverse=True)
    for stat in rows[: options.top]:
        name = f"{stat.module.rsplit('/', 2)[-1]}:{stat.name}"
        print(f"{stat.ttot / n * 1e3:8.3f} ms  {100 * stat.ttot / total:5.1f}%  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
