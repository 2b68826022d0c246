"""Posting throughput: two-leg transfers between random wallets, 8 concurrent writers, on PostgreSQL.

Measures `pokna.ledger.post_transaction` (one unit of work per transfer, committed), once without and once
with an idempotency key per transfer ("service+key"), beside a hand-written PL/pgSQL function that takes
the same locks (the tenant's head, then both accounts in id order), checks the balance, hashes, inserts
the same rows and advances the head, called in one round trip per transfer. All run against the same
tables (so the same triggers fire), on the same server, in the same run, alternating, and the median of
the runs is reported.

    .venv/bin/python bench/ledger_posting.py [--writers 8] [--seconds 8] [--runs 3] [--wallets 200]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from games_support import cpu_snapshot, cpu_used
from ledger_support import median, migrated_postgres, percentile
from sqlalchemy import text
from sqlalchemy.engine import make_url

from pokna.db.engine import make_engine, make_sessionmaker, unit_of_work
from pokna.db.models.tenant import Tenant
from pokna.db.types import utc_now
from pokna.ledger import Posting, deposit, open_account, post_transaction, request_fingerprint

TENANT = "ten_bench"

BASELINE_FUNCTION = """
CREATE OR REPLACE FUNCTION bench_transfer(p_tenant text, p_from text, p_to text, p_amount bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_seq bigint;
    v_prev text;
    v_hash text;
    v_balance bigint;
    v_id text := 'txn_' || replace(gen_random_uuid()::text, '-', '');
    v_now timestamptz := clock_timestamp();
BEGIN
    SELECT last_seq, last_hash INTO v_seq, v_prev FROM ledger_head WHERE tenant_id = p_tenant FOR UPDATE;
    PERFORM 1 FROM account WHERE tenant_id = p_tenant AND id IN (p_from, p_to) ORDER BY id FOR UPDATE;
    SELECT balance INTO v_balance FROM account WHERE tenant_id = p_tenant AND id = p_from;
    IF v_balance < p_amount THEN
        RAISE EXCEPTION 'insufficient funds in %', p_from;
    END IF;
    v_seq := v_seq + 1;
    v_hash := encode(sha256(convert_to(concat_ws('|', v_seq, v_prev, p_tenant, v_id, 'ante', v_now,
        p_from, -p_amount, 'CREDIT', p_to, p_amount, 'CREDIT'), 'UTF8')), 'hex');
    INSERT INTO journal_transaction (id, tenant_id, seq, kind, reference, metadata, idempotency_key,
        request_hash, posting_count, prev_hash, hash, created_at)
    VALUES (v_id, p_tenant, v_seq, 'ante', NULL, '{}', NULL, NULL, 2, v_prev, v_hash, v_now);
    INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency) VALUES
        ('pst_' || replace(gen_random_uuid()::text, '-', ''), p_tenant, v_id, 0, p_from, -p_amount, 'CREDIT'),
        ('pst_' || replace(gen_random_uuid()::text, '-', ''), p_tenant, v_id, 1, p_to, p_amount, 'CREDIT');
    UPDATE ledger_head SET last_seq = v_seq, last_hash = v_hash WHERE tenant_id = p_tenant;
    RETURN v_seq;
END
$$
"""


def prepare(url: str, wallets: int) -> list[str]:
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    with unit_of_work(sessions) as session:
        session.add(Tenant(id=TENANT, name="bench", created_at=utc_now()))
    ids = []
    with unit_of_work(sessions) as session:
        for index in range(wallets):
            wallet = open_account(session, tenant_id=TENANT, kind="player_wallet", external_id=f"w{index}").id
            deposit(session, tenant_id=TENANT, account_id=wallet, amount=10**12)
            ids.append(wallet)
    with engine.begin() as connection:
        connection.execute(text(BASELINE_FUNCTION))
    engine.dispose()
    return ids


def _pairs(wallets: list[str], seed: int) -> Any:
    rng = random.Random(seed)
    while True:
        payer, payee = rng.sample(wallets, 2)
        yield payer, payee


def service_writer(args: tuple[str, list[str], float, int]) -> list[float]:
    return _service(*args, keyed=False)


def keyed_service_writer(args: tuple[str, list[str], float, int]) -> list[float]:
    return _service(*args, keyed=True)


def _service(url: str, wallets: list[str], seconds: float, seed: int, *, keyed: bool) -> list[float]:
    """With `keyed`, every transfer carries a unique idempotency key and request hash, as the API's do."""
    engine = make_engine(url, pool_size=1)
    sessions = make_sessionmaker(engine)
    latencies: list[float] = []
    pairs = _pairs(wallets, seed)
    run_id = uuid.uuid4().hex
    deadline = time.perf_counter() + seconds
    while (start := time.perf_counter()) < deadline:
        payer, payee = next(pairs)
        key = f"bench-{run_id}-{len(latencies)}" if keyed else None
        with unit_of_work(sessions) as session:
            post_transaction(
                session,
                tenant_id=TENANT,
                kind="ante",
                postings=[Posting(payer, -1), Posting(payee, 1)],
                idempotency_key=key,
                request_hash=None if key is None else request_fingerprint({"key": key}),
            )
        latencies.append(time.perf_counter() - start)
    engine.dispose()
    return latencies


def function_writer(args: tuple[str, list[str], float, int]) -> list[float]:
    url, wallets, seconds, seed = args
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    latencies: list[float] = []
    pairs = _pairs(wallets, seed)
    with psycopg.connect(dsn, autocommit=True) as connection:
        deadline = time.perf_counter() + seconds
        while (start := time.perf_counter()) < deadline:
            payer, payee = next(pairs)
            connection.execute("SELECT bench_transfer(%s, %s, %s, 1)", (TENANT, payer, payee))
            latencies.append(time.perf_counter() - start)
    return latencies


def run(
    pool: Any,
    writer: Any,
    url: str,
    wallets: list[str],
    writers: int,
    seconds: float,
    seed: int,
    postmaster_pid: int,
) -> dict[str, float]:
    """Throughput and latency, and the CPU per transfer of the writers (this process's pool: the client
    side) and of the cluster's processes (the server side), from /proc (bench/games_support.py)."""
    before = cpu_snapshot(os.getpid(), postmaster_pid)
    results = pool.map(writer, [(url, wallets, seconds, seed * 100 + index) for index in range(writers)])
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
    with psycopg.connect(dsn) as connection:
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
    options = parser.parse_args()
    with migrated_postgres(options.database_url) as url:
        wallets = prepare(url, options.wallets)
        postmaster = postmaster_of(url)
        contenders = {
            "service": service_writer,
            "service+key": keyed_service_writer,
            "plpgsql": function_writer,
        }
        results: dict[str, list[dict[str, float]]] = {name: [] for name in contenders}
        context = multiprocessing.get_context("spawn")
        with context.Pool(options.writers) as pool:
            for writer in contenders.values():  # warm-up
                run(pool, writer, url, wallets, options.writers, 1.0, 0, postmaster)
            for attempt in range(1, options.runs + 1):
                for name, writer in contenders.items():
                    figures = run(
                        pool, writer, url, wallets, options.writers, options.seconds, attempt, postmaster
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
            "service+key_over_plpgsql_tps": round(
                summary["service+key"]["tps"] / summary["plpgsql"]["tps"], 3
            ),
            "service_over_plpgsql_server_cpu": round(
                summary["service"]["server_cpu_ms"] / summary["plpgsql"]["server_cpu_ms"], 3
            ),
            "service+key_over_plpgsql_server_cpu": round(
                summary["service+key"]["server_cpu_ms"] / summary["plpgsql"]["server_cpu_ms"], 3
            ),
        }
        print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
