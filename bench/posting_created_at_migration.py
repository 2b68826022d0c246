"""What migration 0025_posting_created_at costs on a posting table of some size: a throwaway cluster at 0024,
`--deposits` deposits written through ledger_post() (two postings each; support.ledger_history), then the
upgrade to 0025 timed, with the posting table's size (heap and indexes) before and after.

    .venv/bin/python bench/posting_created_at_migration.py [--deposits 100000]

bench/README.md, "An account's page"; docs/operations.md, "Migration 0025 on a large posting table".
"""

from __future__ import annotations

import argparse
import time
import uuid

from ledger_support import ROOT  # noqa: F401  (puts tests/ on sys.path)
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from pokna.db import migrate
from support.ledger_history import new_tenant_row, open_books, post_deposits
from support.postgres import start_cluster

BEFORE = "0024_game_write_checks"
AFTER = "0025_posting_created_at"
SIZES = (
    "SELECT pg_size_pretty(pg_table_size('posting')), pg_size_pretty(pg_indexes_size('posting')), "
    "(SELECT count(*) FROM posting)"
)


def sizes(engine: Engine) -> str:
    with engine.connect() as connection:
        heap, indexes, rows = connection.execute(text(SIZES)).one()
    return f"{rows} postings, heap {heap}, indexes {indexes}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deposits", type=int, default=100_000)
    options = parser.parse_args()
    cluster = start_cluster(durable=True)
    name = f"pokna_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(cluster.url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        url = make_url(cluster.url).set(database=name).render_as_string(hide_password=False)
        migrate.upgrade(url, BEFORE)
        engine = create_engine(url)
        books = open_books(engine, new_tenant_row(engine))
        post_deposits(engine, books, options.deposits, batch=1000)
        with engine.begin() as connection:
            connection.execute(text("CHECKPOINT"))
        print(f"at {BEFORE}: {sizes(engine)}", flush=True)
        engine.dispose()
        started = time.perf_counter()
        migrate.upgrade(url, AFTER)
        took = time.perf_counter() - started
        print(f"upgrade to {AFTER}: {took:.1f} s", flush=True)
        print(f"at {AFTER}: {sizes(engine)}", flush=True)
        engine.dispose()
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
        cluster.stop()


if __name__ == "__main__":
    main()
