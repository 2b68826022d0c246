"""Round trips to PostgreSQL per request, counted on the client side, by request kind (issues 18, 24).

Serves the product app in-process (`baseline_app.create_app`'s stack through Starlette's TestClient, one
client, no concurrency) on a throwaway migrated cluster, plays `--games` games the way
`bench/games_http.py` does, makes `--deposits` keyed deposits and `--baselines` baseline requests, and
counts the round trips of each request. Deterministic: one client, so no lock waits, retries or races
change the counts.

The app reaches the database through a counting proxy on loopback (`WireTurns`): a round trip is the
client speaking after the server last spoke (or first), however many statements the client sends in a
pipeline before it waits. (Until issue 43 the engine's statements, BEGINs, COMMITs and pings were counted
too; no request reaches the database through an engine any more.)

    .venv/bin/python bench/round_trips.py [--games 30] [--deposits 100] [--baselines 100]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from games_http import FUNDS, create_tenants, next_action
from games_support import migrated_cluster
from sqlalchemy.engine import make_url

from pokna.service_keys import load_service_keys
from pokna.settings import Settings
from support.wire import WireTurns


class Counts:
    """Round trips on the wire since the last `take()` (none counted without a proxy)."""

    def __init__(self, wire: WireTurns | None = None) -> None:
        self.wire = wire

    def take(self) -> Counter[str]:
        return Counter({"wire": self.wire.take()} if self.wire is not None else {})


def funded_wallets(client: Any, count: int) -> list[str]:
    """`count` new wallets of the client's tenant, each funded with FUNDS."""
    wallets = []
    for _ in range(count):
        account = client.post("/v1/accounts", json={}).json()["id"]
        funding = {"Idempotency-Key": f"fund-{uuid.uuid4()}"}
        client.post(
            f"/v1/accounts/{account}/deposits", json={"amount": FUNDS}, headers=funding
        ).raise_for_status()
        wallets.append(account)
    return wallets


@contextmanager
def served(url: str, data_dir: Path, wire: WireTurns | None = None) -> Iterator[tuple[TestClient, Counts]]:
    os.environ.update(
        {
            "POKNA_DATABASE_URL": url,
            "POKNA_DATA_DIR": str(data_dir),
            "POKNA_ENV": "development",
            "POKNA_LOG_LEVEL": "WARNING",
            "POKNA_RATE_LIMIT_PER_SECOND": "0",
        }
    )
    from baseline_app import create_app

    app = create_app()
    counts = Counts(wire)
    with TestClient(app) as client:
        yield client, counts


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=30)
    parser.add_argument("--deposits", type=int, default=100)
    parser.add_argument("--baselines", type=int, default=100)
    options = parser.parse_args()
    per_kind: dict[str, Counter[str]] = {}
    requests: Counter[str] = Counter()
    with migrated_cluster() as database, tempfile.TemporaryDirectory(prefix="pokna-rt-") as scratch:
        data_dir = Path(scratch) / "data"
        load_service_keys(Settings(data_dir=data_dir))
        (key,) = create_tenants(database.url, 1)
        target = make_url(database.url)
        wire = WireTurns(target.host or "127.0.0.1", target.port or 5432)
        proxied = target.set(host="127.0.0.1", port=wire.port).render_as_string(hide_password=False)
        with served(proxied, data_dir, wire) as (client, counts):
            client.headers["Authorization"] = f"Bearer {key}"
            wallets = funded_wallets(client, 4)

            def count(kind: str, response: Any, expected: int) -> Any:
                assert response.status_code == expected, response.text
                requests[kind] += 1
                per_kind.setdefault(kind, Counter()).update(counts.take())
                return response.json()

            rng = random.Random(1)
            terms = {"vigo_account_id": wallets[0], "player_account_ids": wallets[1:], "stake": 5}
            for _round in range(2):  # the first round warms the caches (statements, accounts) up
                for kind in list(per_kind):
                    per_kind[kind].clear()
                    requests[kind] = 0
                counts.take()
                for number in range(options.games):
                    game = count("create", client.post("/v1/games", json=terms), 201)
                    keyed = number % 2 == 1  # every other game sends each action with an Idempotency-Key
                    while game["status"] not in ("settled", "cancelled"):
                        action = next_action(game, rng)
                        headers = {"Idempotency-Key": f"rt-{uuid.uuid4()}"} if keyed else {}
                        game = count(
                            "action (keyed)" if keyed else "action",
                            client.post(f"/v1/games/{game['id']}/actions", json=action, headers=headers),
                            200,
                        )
                for _ in range(options.deposits):
                    path = f"/v1/accounts/{wallets[0]}/deposits"
                    headers = {"Idempotency-Key": f"rt-{uuid.uuid4()}"}
                    count("deposit (keyed)", client.post(path, json={"amount": 1}, headers=headers), 201)
                for _ in range(options.baselines):
                    count("baseline", client.post("/bench/baseline", json={"account_id": wallets[0]}), 200)
    print(f"{'request':<16} {'count':>6}  round trips")
    for kind, sent in per_kind.items():
        n = requests[kind]
        print(f"{kind:<16} {n:>6}  {sent['wire'] / n:>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
