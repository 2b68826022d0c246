"""Round trips to PostgreSQL per request, counted on the client side, by request kind (issues 18, 24).

Serves the product app in-process (`baseline_app.create_app`'s stack through Starlette's TestClient, one
client, no concurrency) on a throwaway migrated cluster, plays `--games` games the way
`bench/games_http.py` does, makes `--deposits` keyed deposits and `--baselines` baseline requests, and
counts, per request, what the engine sent the server: statements (`before_cursor_execute`), BEGINs
(psycopg opens every transaction with its own round trip), COMMITs and ROLLBACKs, and pool pre-pings.
Each is one round trip. Deterministic: one client, so no lock waits, retries or races change the counts.

Since issue 24 the game action runs on psycopg's async driver, which the engine never sees, and sends
several statements per round trip (pipelines). So the app reaches the database through a counting proxy
on loopback (`WireTurns`): a round trip is the client speaking after the server last spoke (or first),
whatever the driver and however many statements the client sends before it waits. The `wire` column is
that count, the one to read; the engine's columns stay for the synchronous paths.

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
from sqlalchemy import Engine, event
from sqlalchemy.engine import make_url

from pokna.service_keys import load_service_keys
from pokna.settings import Settings
from support.wire import WireTurns

KINDS = ("statement", "begin", "commit", "rollback", "ping", "wire")


class Counts:
    """What the engine sent, by kind, since the last `take()`."""

    def __init__(self, engine: Engine, wire: WireTurns | None = None) -> None:
        self.wire = wire
        self.sent: Counter[str] = Counter()
        self.statements: Counter[str] = Counter()
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "begin", lambda _connection: self.sent.update(["begin"]))
        event.listen(engine, "commit", lambda _connection: self.sent.update(["commit"]))
        event.listen(engine, "rollback", lambda _connection: self.sent.update(["rollback"]))
        dialect = engine.dialect
        ping = dialect.do_ping

        def counted_ping(dbapi_connection: Any) -> bool:
            self.sent.update(["ping"])
            return bool(ping(dbapi_connection))

        dialect.do_ping = counted_ping  # type: ignore[method-assign]

    def _statement(self, _connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        self.sent.update(["statement"])
        self.statements.update([" ".join(statement.split())[:90]])

    def take(self) -> Counter[str]:
        taken = self.sent
        self.sent = Counter()
        if self.wire is not None:
            taken["wire"] = self.wire.take()
        return taken


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
    counts = Counts(app.state.runtime.engine, wire)
    with TestClient(app) as client:
        yield client, counts


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=30)
    parser.add_argument("--deposits", type=int, default=100)
    parser.add_argument("--baselines", type=int, default=100)
    parser.add_argument("--show-statements", action="store_true", help="the statements, by text, per kind")
    options = parser.parse_args()
    per_kind: dict[str, Counter[str]] = {}
    requests: Counter[str] = Counter()
    statements: dict[str, Counter[str]] = {}
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
                statements.setdefault(kind, Counter()).update(counts.statements)
                counts.statements.clear()
                return response.json()

            rng = random.Random(1)
            terms = {"vigo_account_id": wallets[0], "player_account_ids": wallets[1:], "stake": 5}
            for _round in range(2):  # the first round warms the caches (statements, accounts) up
                for kind in list(per_kind):
                    per_kind[kind].clear()
                    requests[kind] = 0
                    statements[kind].clear()
                counts.take()
                counts.statements.clear()
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
    print(f"{'request':<16} {'count':>6} " + " ".join(f"{kind:>9}" for kind in KINDS) + "  round trips")
    for kind, sent in per_kind.items():
        n = requests[kind]
        total = sent["wire"] / n
        print(f"{kind:<16} {n:>6} " + " ".join(f"{sent[k] / n:>9.2f}" for k in KINDS) + f"  {total:>11.2f}")
    if options.show_statements:
        for kind, texts in statements.items():
            print(f"\n{kind}:")
            for text, number in texts.most_common():
                print(f"  {number / requests[kind]:6.2f}  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
