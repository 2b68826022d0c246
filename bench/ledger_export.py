"""Export and offline verification of a large ledger: seconds and peak RSS of each, as separate processes.

Loads N postings (N/2 two-leg transfers between 1,000 wallets, hash-chained exactly as the service does)
into a throwaway PostgreSQL with COPY (every trigger fires), then runs
`pokna ledger export --format jsonl` and `pokna audit verify` as child processes and reads each one's
peak RSS from wait4().

    .venv/bin/python bench/ledger_export.py [--postings 1000000] [--database-url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from ledger_support import migrated_postgres
from sqlalchemy.engine import make_url

from pokna.db.engine import make_engine, make_sessionmaker, unit_of_work
from pokna.db.models.tenant import Tenant
from pokna.db.types import new_id, utc_now
from pokna.ledger import deposit, open_account
from pokna.ledger.chain import document_hash, format_timestamp, transaction_document
from pokna.ledger.repository import read_head

TENANT = "ten_export"
WALLETS = 1000
BATCH = 20_000
CLI = "import sys, pokna.cli.ledger; from pokna.cli import main; sys.argv[0] = 'pokna'; main()"


def load(url: str, postings: int) -> int:
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    with unit_of_work(sessions) as session:
        session.add(Tenant(id=TENANT, name="export bench", created_at=utc_now()))
    wallets = []
    with unit_of_work(sessions) as session:
        for index in range(WALLETS):
            wallet = open_account(session, tenant_id=TENANT, kind="player_wallet", external_id=f"w{index}").id
            deposit(session, tenant_id=TENANT, account_id=wallet, amount=10**9)
            wallets.append(wallet)
        seq, prev_hash = read_head(session, TENANT)
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
                legs.extend((new_id("pst"), transaction_id, leg, *entry) for leg, entry in enumerate(pair))
                prev_hash = hash_
            with connection.cursor() as cursor:
                with cursor.copy(
                    "COPY journal_transaction (id, tenant_id, seq, kind, metadata, posting_count, prev_hash, hash, "
                    "created_at) FROM STDIN"
                ) as copy:
                    for row in transactions:
                        copy.write_row(row)
                with cursor.copy(
                    "COPY posting (id, transaction_id, leg, account_id, amount, currency) FROM STDIN"
                ) as copy:
                    for row in legs:
                        copy.write_row(row)
                cursor.execute(
                    "UPDATE ledger_head SET last_seq = %s, last_hash = %s WHERE tenant_id = %s",
                    (seq, prev_hash, TENANT),
                )
            connection.commit()
            remaining -= count
            print(f"  loaded up to seq {seq}", file=sys.stderr, flush=True)
    return seq * 2


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(seconds, peak RSS in MB, exit code) of one child process."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", CLI, *argv], env=env, stdout=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_maxrss / 1024, process.returncode


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--postings", type=int, default=1_000_000)
    parser.add_argument("--database-url", help="an existing PostgreSQL server (default: a throwaway cluster)")
    options = parser.parse_args()
    with migrated_postgres(options.database_url) as url, tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        total = load(url, options.postings)
        print(f"loaded {total} postings in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        env = {**os.environ, "POKNA_DATABASE_URL": url, "POKNA_DATA_DIR": scratch}
        export = Path(scratch) / "ledger.jsonl"
        seconds, rss, code = measure(["ledger", "export", "--tenant", TENANT, "-o", str(export)], env)
        assert code == 0, code
        verify_seconds, verify_rss, verify_code = measure(["audit", "verify", str(export)], env)
        assert verify_code == 0, verify_code
        result = {
            "postings": total,
            "export_bytes": export.stat().st_size,
            "export": {
                "seconds": round(seconds, 2),
                "postings_per_s": round(total / seconds),
                "peak_rss_mb": round(rss, 1),
            },
            "verify": {
                "seconds": round(verify_seconds, 2),
                "postings_per_s": round(total / verify_seconds),
                "peak_rss_mb": round(verify_rss, 1),
            },
        }
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
