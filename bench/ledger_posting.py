"""Posting throughput: deposits and withdrawals of 1 credit on random wallets, 8 concurrent writers, on PostgreSQL.

Measures the path every client money move takes: `pokna.ledger.moving.move`, the service function the
deposit and withdrawal routes call (each move under an Idempotency-Key of its own, as the API requires: the
claim, the hold, one `ledger_move()` call with COMMIT behind it), without the HTTP around it. Beside it, a
hand-written PL/pgSQL function that takes the same ledger locks (the head of the wallet's chain, then the
wallet and that chain's funding sub-account in id order), checks the balance, hashes (not RFC 8785), inserts
the same journal rows and advances the head, in one round trip per move, with no idempotency record, no
announcement and no stored answer. Both run against the same tables (so the same triggers fire), on the
same server, in the same run, alternating, and the median of the runs is reported.

    .venv/bin/python bench/ledger_posting.py [--writers 8] [--seconds 8] [--runs 3] [--wallets 200] [--durable]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import time
from pathlib import Path
from typing import Any

import psycopg
from games_support import cpu_snapshot, cpu_used
from ledger_support import median, migrated_postgres, percentile
from psycopg import AsyncConnection
from sqlalchemy import text
from sqlalchemy.engine import make_url

from pokna.db.engine import make_engine
from pokna.ledger import chain_for
from support.driver import funding_account, new_api_key, on_database, open_account_on  # type: ignore[import-not-found,unused-ignore]
from support.money import Teller, teller_on  # type: ignore[import-not-found,unused-ignore]
from support.sessions import make_sessionmaker, unit_of_work  # type: ignore[import-not-found,unused-ignore]

BASELINE_FUNCTION = """
CREATE OR REPLACE FUNCTION bench_move(p_tenant text, p_chain smallint, p_from text, p_to text, p_amount bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_seq bigint;
    v_prev text;
    v_hash text;
    v_balance bigint;
    v_kind text;
    v_id text := 'txn_' || replace(gen_random_uuid()::text, '-', '');
    v_now timestamptz := clock_timestamp();
BEGIN
    INSERT INTO ledger_head (tenant_id, chain, last_seq, last_hash) VALUES (p_tenant, p_chain, 0, repeat('0', 64))
        ON CONFLICT DO NOTHING;
    SELECT last_seq, last_hash INTO v_seq, v_prev FROM ledger_head
        WHERE tenant_id = p_tenant AND chain = p_chain FOR UPDATE;
    PERFORM 1 FROM account WHERE tenant_id = p_tenant AND id IN (p_from, p_to) ORDER BY id FOR NO KEY UPDATE;
    SELECT balance, kind INTO v_balance, v_kind FROM account WHERE tenant_id = p_tenant AND id = p_from;
    IF v_kind = 'player_wallet' AND v_balance < p_amount THEN
        RAISE EXCEPTION 'insufficient funds in %', p_from;
    END IF;
    v_seq := v_seq + 1;
    v_hash := encode(sha256(convert_to(concat_ws('|', p_chain, v_seq, v_prev, p_tenant, v_id, 'deposit', v_now,
        p_from, -p_amount, 'CREDIT', p_to, p_amount, 'CREDIT'), 'UTF8')), 'hex');
    INSERT INTO journal_transaction (id, tenant_id, chain, seq, kind, reference, metadata, posting_count,
        prev_hash, hash, created_at)
    VALUES (v_id, p_tenant, p_chain, v_seq, 'deposit', NULL, '{}', 2, v_prev, v_hash, v_now);
    INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency, created_at) VALUES
        ('pst_' || replace(gen_random_uuid()::text, '-', ''), p_tenant, v_id, 0, p_from, -p_amount, 'CREDIT',
            v_now),
        ('pst_' || replace(gen_random_uuid()::text, '-', ''), p_tenant, v_id, 1, p_to, p_amount, 'CREDIT',
            v_now);
    UPDATE ledger_head SET last_seq = v_seq, last_hash = v_hash WHERE tenant_id = p_tenant AND chain = p_chain;
    RETURN v_seq;
END
$$
"""

Wallet = tuple[str, int, str]
"""A wallet, its chain and the funding sub-account of that chain (the other side of its deposits)."""


def prepare(url: str, wallets: int) -> tuple[str, str, list[Wallet]]:
    """A tenant with an API key and `wallets` wallets, each funded with 10^12 as its app funds it."""
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    issued = new_api_key(sessions, "bench")
    tenant_id, api_key = issued.tenant_id, issued.secret

    async def opened(connection: AsyncConnection[Any]) -> list[str]:
        return [
            (
                await open_account_on(
                    connection, tenant_id=tenant_id, kind="player_wallet", external_id=f"w{index}"
                )
            ).id
            for index in range(wallets)
        ]

    ids: list[str] = on_database(sessions, opened)
    with teller_on(url, tenant_id, api_key) as teller:
        teller.run(_fund(teller, ids))
    with unit_of_work(sessions) as session:
        placed = [
            (wallet, chain_for(wallet), funding_account(session, tenant_id, chain=chain_for(wallet)).id)
            for wallet in ids
        ]
    with engine.begin() as connection:
        connection.execute(text(BASELINE_FUNCTION))
    engine.dispose()
    return tenant_id, api_key, placed


async def _fund(teller: Teller, wallets: list[str]) -> None:
    async def client(first: int) -> None:
        for wallet in wallets[first::8]:
            await teller.deposit(wallet, 10**12)

    await asyncio.gather(*(client(first) for first in range(8)))


Job = tuple[str, str, str, list[Wallet], float, int]
"""What one writer process is given: url, tenant, API key, wallets, seconds, seed."""


def service_writer(job: Job) -> list[float]:
    """Deposits and withdrawals in turn on random wallets, each under a key of its own, on one connection."""
    url, tenant_id, api_key, wallets, seconds, seed = job
    rng = random.Random(seed)
    latencies: list[float] = []

    async def write(teller: Teller) -> None:
        async with teller.database.connection() as connection:
            deadline = time.perf_counter() + seconds
            while (start := time.perf_counter()) < deadline:
                wallet = rng.choice(wallets)[0]
                move = teller.deposit if len(latencies) % 2 == 0 else teller.withdraw
                await move(wallet, 1, connection=connection)
                latencies.append(time.perf_counter() - start)

    with teller_on(url, tenant_id, api_key) as teller:
        teller.run(write(teller))
    return latencies


def function_writer(job: Job) -> list[float]:
    url, tenant_id, _, wallets, seconds, seed = job
    rng = random.Random(seed)
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    latencies: list[float] = []
    with psycopg.connect(dsn, autocommit=True) as connection:
        deadline = time.perf_counter() + seconds
        while (start := time.perf_counter()) < deadline:
            wallet, chain, funding = rng.choice(wallets)
            payer, payee = (funding, wallet) if len(latencies) % 2 == 0 else (wallet, funding)
            connection.execute("SELECT bench_move(%s, %s, %s, %s, 1)", (tenant_id, chain, payer, payee))
            latencies.append(time.perf_counter() - start)
    return latencies


def run(
    pool: Any,
    writer: Any,
    prepared: tuple[str, str, str, list[Wallet]],
    writers: int,
    seconds: float,
    seed: int,
    postmaster_pid: int,
) -> dict[str, float]:
    """Throughput and latency, and the CPU per move of the writers (this process's pool: the client side)
    and of the cluster's processes (the server side), from /proc (bench/games_support.py)."""
    before = cpu_snapshot(os.getpid(), postmaster_pid)
    results = pool.map(writer, [(*prepared, seconds, seed * 100 + index) for index in range(writers)])
    used = cpu_used(before, cpu_snapshot(os.getpid(), postmaster_pid))
    latencies = [sample for result in results for sample in result]
    count = max(1, len(latencies))
    return {
        "tps": len(latencies) / seconds,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "count": len(latencies),
        "client_cpu_ms": used["api"] * 1000 / count,
        "server_cpu_ms": used["postgres"] * 1000 / count,
    }


def postmaster_of(url: str) -> int:
    """The cluster's postmaster: the parent of a backend of ours."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as connection:  # read while the backend is there to read
        row = connection.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        stat = Path(f"/proc/{row[0]}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--wallets", type=int, default=200)
    parser.add_argument("--database-url", help="an existing PostgreSQL server (default: a throwaway cluster)")
    parser.add_argument(
        "--durable",
        action="store_true",
        help="the throwaway cluster commits synchronously, as production runs",
    )
    options = parser.parse_args()
    with migrated_postgres(options.database_url, durable=options.durable) as url:
        prepared = (url, *prepare(url, options.wallets))
        postmaster = postmaster_of(url)
        contenders = {"service": service_writer, "plpgsql": function_writer}
        results: dict[str, list[dict[str, float]]] = {name: [] for name in contenders}
        context = multiprocessing.get_context("spawn")
        with context.Pool(options.writers) as pool:
            for writer in contenders.values():  # warm-up
                run(pool, writer, prepared, options.writers, 1.0, 0, postmaster)
            for attempt in range(1, options.runs + 1):
                for name, writer in contenders.items():
                    figures = run(
                        pool, writer, prepared, options.writers, options.seconds, attempt, postmaster
                    )
                    results[name].append(figures)
                    print(
                        f"run {attempt} {name:11} {json.dumps({k: round(v, 2) for k, v in figures.items()})}"
                    )
        summary = {
            name: {
                key: round(median([run[key] for run in runs]), 3)
                for key in ("tps", "p50_ms", "p99_ms", "client_cpu_ms", "server_cpu_ms")
            }
            for name, runs in results.items()
        }
        summary["ratio"] = {
            "service_over_plpgsql_tps": round(summary["service"]["tps"] / summary["plpgsql"]["tps"], 3),
            "service_over_plpgsql_server_cpu": round(
                summary["service"]["server_cpu_ms"] / summary["plpgsql"]["server_cpu_ms"], 3
            ),
        }
        print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
