"""Export and offline verification of a large ledger: seconds and peak RSS of each, as separate processes.

Loads N postings into a throwaway PostgreSQL: 1,000 wallets funded through the deposit route's service
function (each deposit on its wallet's chain), then two-leg transfers between them on chain 0, hash-chained
exactly as the service does, with COPY (every trigger fires). Then runs
`pokna ledger export --format jsonl` and `pokna audit verify` as child processes. Memory is sampled from
/proc every 100 ms: the largest peak RSS (VmHWM) of any one process (`audit verify` forks workers), and
the peak PSS of the command and its workers together (shared pages counted once).

    .venv/bin/python bench/ledger_export.py [--postings 1000000] [--database-url URL]

Loading a million postings takes minutes; to measure again without reloading, load once into a server that
outlives the run and keep the database, then point later runs at it:

    .venv/bin/python bench/ledger_export.py --database-url URL --keep      # prints the loaded database's URL
    .venv/bin/python bench/ledger_export.py --loaded-url LOADED_URL [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from ledger_support import migrated_postgres
from psycopg import AsyncConnection
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from pokna.db import migrate
from pokna.db.engine import make_engine
from pokna.db.models.tenant import Tenant
from pokna.db.types import new_id, utc_now
from pokna_verify.ledger.chain import document_hash, format_timestamp, transaction_document
from support.driver import issue_api_key, on_database, open_account_on, read_heads  # type: ignore[import-not-found,unused-ignore]
from support.money import Teller, teller_on  # type: ignore[import-not-found,unused-ignore]
from support.sessions import make_sessionmaker, unit_of_work  # type: ignore[import-not-found,unused-ignore]

TENANT = "ten_export"
WALLETS = 1000
BATCH = 20_000
CLI = "import sys, pokna.cli.ledger; from pokna.cli import main; sys.argv[0] = 'pokna'; main()"


def load(url: str, postings: int) -> int:
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    with unit_of_work(sessions) as session:
        session.add(Tenant(id=TENANT, name="export bench", created_at=utc_now()))
    api_key = issue_api_key(sessions, TENANT).secret

    async def opened(connection: AsyncConnection[Any]) -> list[str]:
        return [
            (
                await open_account_on(
                    connection, tenant_id=TENANT, kind="player_wallet", external_id=f"w{index}"
                )
            ).id
            for index in range(WALLETS)
        ]

    wallets: list[str] = on_database(sessions, opened)
    # Funded as the tenant's app funds them (support.money: the deposit route's service function), each on
    # its wallet's chain; the transfers below are COPYed onto chain 0, after its deposits.
    with teller_on(url, TENANT, api_key) as teller:
        teller.run(_fund(teller, wallets))
    with unit_of_work(sessions) as session:
        seq, prev_hash = read_heads(session, TENANT)[0]
    engine.dispose()

    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    rng = random.Random(7)
    moment = datetime.now(UTC)
    remaining = postings // 2 - WALLETS
    with psycopg.connect(dsn) as connection:
        while remaining > 0:
            count = min(BATCH, remaining)
            transactions: list[tuple[object, ...]] = []
            legs: list[tuple[object, ...]] = []
            for _ in range(count):
                seq += 1
                moment += timedelta(microseconds=997)
                payer, payee = rng.sample(wallets, 2)
                amount = rng.randint(1, 50)
                transaction_id = new_id("txn")
                pair = [(payer, -amount, "CREDIT"), (payee, amount, "CREDIT")]
                hash_ = document_hash(
                    transaction_document(
                        seq=seq, prev_hash=prev_hash, tenant_id=TENANT, transaction_id=transaction_id,
                        kind="ante", reference=None, metadata={}, created_at=format_timestamp(moment), postings=pair,
                    )
                )  # fmt: skip
                transactions.append((transaction_id, TENANT, seq, "ante", "{}", 2, prev_hash, hash_, moment))
                legs.extend(
                    (new_id("pst"), TENANT, transaction_id, leg, *entry, moment)
                    for leg, entry in enumerate(pair)
                )
                prev_hash = hash_
            with connection.cursor() as cursor:
                with cursor.copy(
                    "COPY journal_transaction (id, tenant_id, seq, kind, metadata, posting_count, prev_hash, hash, "
                    "created_at) FROM STDIN"
                ) as copy:
                    for row in transactions:
                        copy.write_row(row)
                with cursor.copy(
                    "COPY posting (id, tenant_id, transaction_id, leg, account_id, amount, currency, created_at) "
                    "FROM STDIN"
                ) as copy:
                    for row in legs:
                        copy.write_row(row)
                cursor.execute(
                    "INSERT INTO ledger_head (tenant_id, chain, last_seq, last_hash) VALUES (%s, 0, %s, %s) "
                    "ON CONFLICT (tenant_id, chain) DO UPDATE SET last_seq = EXCLUDED.last_seq, "
                    "last_hash = EXCLUDED.last_hash",
                    (TENANT, seq, prev_hash),
                )
            connection.commit()
            remaining -= count
            print(f"  loaded up to seq {seq}", file=sys.stderr, flush=True)
    return loaded_postings(url)


async def _fund(teller: Teller, wallets: list[str]) -> None:
    async def client(first: int) -> None:
        for wallet in wallets[first::8]:
            await teller.deposit(wallet, 10**9)

    await asyncio.gather(*(client(first) for first in range(8)))


@contextmanager
def kept_database(server_url: str) -> Iterator[str]:
    """A fresh migrated database on `server_url` that is not dropped afterwards (for --loaded-url)."""
    name = f"pokna_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    migrate.upgrade(url)
    print(f"keeping the loaded database: --loaded-url {url}", file=sys.stderr)
    yield url


@contextmanager
def loaded_database(url: str) -> Iterator[str]:
    yield url


def loaded_postings(url: str) -> int:
    engine = make_engine(url)
    with engine.connect() as connection:
        count = connection.execute(
            text(
                "SELECT count(*) FROM posting AS p JOIN journal_transaction AS t ON t.id = p.transaction_id "
                "WHERE t.tenant_id = :tenant"
            ),
            {"tenant": TENANT},
        ).scalar_one()
    engine.dispose()
    return int(count)


@dataclass
class Measured:
    seconds: float
    peak_rss_mb: float  # the largest peak RSS (VmHWM) of any one process: the command or a worker
    peak_tree_pss_mb: float  # the command and its workers together, shared pages counted once
    exit_code: int


def measure(argv: list[str], env: dict[str, str]) -> Measured:
    """Run one `pokna` command as a child process; sample its process tree's memory every 100 ms.

    Not wait4()'s ru_maxrss: the child inherits the high-water mark of the process that started it (the
    bench itself, ~100 MB after loading) when it execs, so that figure is the bench's, not the command's.
    """
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", CLI, *argv], env=env, stdout=subprocess.DEVNULL)
    peak_hwm = peak_pss = 0
    while True:
        pid, status, _usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        members = _tree(process.pid)
        peak_hwm = max([peak_hwm, *(_status_kb(member, "VmHWM:") for member in members)])
        peak_pss = max(peak_pss, sum(_pss_kb(member) for member in members))
        time.sleep(0.1)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return Measured(elapsed, peak_hwm / 1024, peak_pss / 1024, process.returncode)


def _tree(root: int) -> list[int]:
    members, pending = [], [root]
    while pending:
        pid = pending.pop()
        members.append(pid)
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                pending.extend(int(child) for child in children.read_text().split())
            except OSError:
                continue
    return members


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--postings", type=int, default=1_000_000)
    parser.add_argument("--database-url", help="an existing PostgreSQL server (default: a throwaway cluster)")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the loaded database on --database-url's server (not dropped)",
    )
    parser.add_argument("--loaded-url", help="a database loaded by an earlier --keep run: skip loading")
    parser.add_argument("--repeat", type=int, default=1, help="export and verify this many times")
    options = parser.parse_args()
    if options.keep and options.database_url is None:
        parser.error("--keep needs --database-url (a throwaway cluster is removed at the end)")
    if options.loaded_url:
        database = loaded_database(options.loaded_url)
    elif options.keep:
        database = kept_database(options.database_url)
    else:
        database = migrated_postgres(options.database_url)
    with database as url, tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        if options.loaded_url:
            total = loaded_postings(url)
        else:
            total = load(url, options.postings)
            print(f"loaded {total} postings in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        env = {**os.environ, "POKNA_DATABASE_URL": url, "POKNA_DATA_DIR": scratch}
        export = Path(scratch) / "ledger.jsonl"
        for _ in range(options.repeat):
            export_run = measure(["ledger", "export", "--tenant", TENANT, "-o", str(export)], env)
            assert export_run.exit_code == 0, export_run.exit_code
            verify_run = measure(["audit", "verify", str(export)], env)
            assert verify_run.exit_code == 0, verify_run.exit_code
            result = {
                "postings": total,
                "export_bytes": export.stat().st_size,
                "export": summary(export_run, total),
                "verify": summary(verify_run, total),
                "load_average": [round(value, 2) for value in os.getloadavg()],
            }
            print(json.dumps(result, indent=2), flush=True)


def summary(run: Measured, postings: int) -> dict[str, float]:
    return {
        "seconds": round(run.seconds, 2),
        "postings_per_s": round(postings / run.seconds),
        "peak_rss_mb": round(run.peak_rss_mb, 1),
        "peak_tree_pss_mb": round(run.peak_tree_pss_mb, 1),
    }


if __name__ == "__main__":
    main()
