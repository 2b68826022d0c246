"""The public log at the size users reach: a tenant with --games finished games (100,000 by default) inserted
straight into the `game` table, appended by the sequencer in passes of --batch, then the public reads timed:
an inclusion proof for --samples random games, consistency proofs between random sizes and the latest
checkpoint, each through the service function (on one async connection, autocommit) and through the HTTP
route (the app in process, FastAPI and the request's connection included, no network).

    .venv/bin/python bench/public_log.py --games 100000 --batch 5000 --samples 1000

The games are rows, not played games: their proofs are small stand-ins (`{"game_id", "n"}`), which the
leaf hashes like any other; what is measured is the log, not the rules.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from ledger_support import migrated_postgres, percentile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import text  # noqa: E402

from pokna.app import create_app  # noqa: E402
from pokna.db.engine import make_engine  # noqa: E402
from pokna.public_log import reads  # noqa: E402
from pokna.public_log.sequencer import LogSigner  # noqa: E402
from pokna.runtime import Runtime  # noqa: E402
from pokna.settings import Environment, Settings  # noqa: E402
from support.driver import create_tenant, open_account  # noqa: E402
from support.game_logs import sequence_all  # type: ignore[import-not-found,unused-ignore]  # noqa: E402
from support.sessions import make_sessionmaker, unit_of_work  # type: ignore[import-not-found,unused-ignore]  # noqa: E402

INSERT_GAMES = text(
    """
    INSERT INTO game (id, tenant_id, status, stake, challenge_raise, currency, turn_timeout_seconds,
        pot_account_id, state, version, event_count, server_seed_hash, sealed_server_seed, receipt, proof,
        created_at, ended_at)
    SELECT 'game_' || lpad(n::text, 12, '0'), :tenant_id, 'settled', 5, 3, 'CRD', 60, :pot, '{}', 1, 0,
        repeat('0', 64), 'sealed', '{}', json_build_object('game_id', 'game_' || lpad(n::text, 12, '0'), 'n', n),
        now(), now() + n * interval '1 millisecond'
    FROM generate_series(1, :games) AS n
    """
)


def timed_ms(samples: int, call: Callable[[int], object]) -> list[float]:
    spent = []
    for sample in range(samples):
        started = time.perf_counter()
        call(sample)
        spent.append((time.perf_counter() - started) * 1000)
    return spent


async def timed_ms_async(samples: int, call: Callable[[int], Awaitable[object]]) -> list[float]:
    spent = []
    for sample in range(samples):
        started = time.perf_counter()
        await call(sample)
        spent.append((time.perf_counter() - started) * 1000)
    return spent


def said(name: str, spent: list[float]) -> str:
    return (
        f"{name}: median {statistics.median(spent):.2f} ms, p99 {percentile(spent, 0.99):.2f} ms, "
        f"max {max(spent):.2f} ms over {len(spent)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--samples", type=int, default=1_000)
    parser.add_argument("--database-url")
    options = parser.parse_args()
    with migrated_postgres(options.database_url) as url:
        engine = make_engine(url)
        # One client asks every request: the key-less rate limit (20/s a client address) is off for it.
        settings = Settings(
            env=Environment.TEST,
            data_dir=Path(tempfile.mkdtemp(prefix="pokna-bench-public-log-")),
            database_url=url,
            client_rate_limit_per_second=0,
        )
        runtime = Runtime.from_settings(settings)
        tenant_id = create_tenant(engine, "Bench").id
        with unit_of_work(make_sessionmaker(engine)) as session:
            pot = open_account(session, tenant_id=tenant_id, kind="game_pot").id
            session.execute(INSERT_GAMES, {"tenant_id": tenant_id, "pot": pot, "games": options.games})
        signer = LogSigner("bench.example/games", runtime.keys.signing_key)
        started, passes = time.perf_counter(), 0
        while sequence_all(runtime.aio, signer, batch=options.batch):
            passes += 1
        appending = time.perf_counter() - started
        print(
            f"sequencer: {options.games} games in {passes} passes of up to {options.batch}, {appending:.1f} s "
            f"({options.games / appending:.0f} games/s, {appending / passes * 1000:.0f} ms a pass)"
        )
        rng = random.Random(47)
        games = [f"game_{rng.randint(1, options.games):012d}" for _ in range(options.samples)]
        sizes = [sorted(rng.sample(range(1, options.games + 1), 2)) for _ in range(options.samples)]

        async def service_functions() -> None:
            async with runtime.aio.connection() as connection:

                async def inclusion(sample: int) -> object:
                    return await reads.inclusion(connection, tenant_id, games[sample], None)

                async def consistency(sample: int) -> object:
                    return await reads.consistency(connection, tenant_id, *sizes[sample])

                print(
                    said(
                        "inclusion proof, service function", await timed_ms_async(options.samples, inclusion)
                    )
                )
                print(
                    said(
                        "consistency proof, service function",
                        await timed_ms_async(options.samples, consistency),
                    )
                )

        asyncio.run(service_functions())
        with TestClient(create_app(settings, runtime)) as client:
            base = f"/v1/logs/{tenant_id}"

            def get(path: str) -> object:
                answer = client.get(path)
                assert answer.status_code == 200, answer.text
                return answer

            print(
                said(
                    "inclusion proof, HTTP route",
                    timed_ms(options.samples, lambda s: get(f"{base}/games/{games[s]}/inclusion")),
                )
            )
            print(
                said(
                    "consistency proof, HTTP route",
                    timed_ms(
                        options.samples,
                        lambda s: get(f"{base}/consistency?first={sizes[s][0]}&second={sizes[s][1]}"),
                    ),
                )
            )
            print(
                said(
                    "latest checkpoint, HTTP route",
                    timed_ms(options.samples, lambda s: get(f"{base}/checkpoint")),
                )
            )
        engine.dispose()


if __name__ == "__main__":
    main()
