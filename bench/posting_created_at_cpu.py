"""PostgreSQL's CPU per `ledger_post()` of one deposit, before and after 0025_posting_created_at: two databases
of one throwaway cluster, one migrated to 0024 (the posting without created_at, `ix_posting_account_id`)
and one to 0025 (created_at written and compared by the posting trigger, the wider `ix_posting_account_time`),
each with one tenant, a funding account, `--wallets` wallets and `--preload` deposits, then ANALYZE. Then
`--rounds` rounds, the two databases' order reversed every other round: on each, one connection in
autocommit calls `ledger_post()` of one deposit (to the wallets in turn) `--calls` times. Reported: the
backend's CPU time per call (/proc/<pid>/schedstat, nanoseconds) per round and the median ratio of the
rounds (0025 over 0024). The documents are built in this process, outside the backend's time.

    PYTHONPATH=service:verifier:bench .venv/bin/python bench/posting_created_at_cpu.py [--calls 1500] [--rounds 6]

bench/README.md, "An account's page".
"""

from __future__ import annotations

import argparse
import json
import statistics
import uuid
from pathlib import Path

from ledger_support import ROOT  # noqa: F401  (puts tests/ on sys.path)
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from pokna.db import migrate
from pokna.ledger.drafts import draft_of, unchained
from pokna.ledger.model import AccountTransfer
from pokna.ledger.posting_batch import batch_document
from support.ledger_history import POST, Books, new_tenant_row, open_books, post_deposits
from support.postgres import start_cluster

REVISIONS = ("0024_game_write_checks", "0025_posting_created_at")


def backend_ns(pid: int) -> int:
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def documents(books: Books, calls: int) -> list[str]:
    currency = {account: "CREDIT" for account in (books.funding, *books.wallets)}
    made = []
    for n in range(calls):
        wallet = books.wallets[n % len(books.wallets)]
        draft = draft_of(
            "deposit", AccountTransfer("deposit", books.funding, wallet, 1).postings(), None, None
        )
        written = unchained(books.tenant_id, draft, currency, 0)
        made.append(json.dumps(batch_document(sorted((books.funding, wallet)), {}, [written], 0).as_json()))
    return made


def phase(engine: Engine, books: Books, calls: int) -> float:
    """Microseconds of the backend's CPU per call."""
    batches = documents(books, calls)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        pid = connection.scalar(text("SELECT pg_backend_pid()"))
        started = backend_ns(pid)
        for batch in batches:
            assert connection.scalar(text(POST), {"tenant": books.tenant_id, "batch": batch}) == "posted"
        return (backend_ns(pid) - started) / calls / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--wallets", type=int, default=16)
    parser.add_argument("--preload", type=int, default=3000)
    options = parser.parse_args()
    cluster = start_cluster()
    admin = create_engine(cluster.url, isolation_level="AUTOCOMMIT")
    engines: dict[str, Engine] = {}
    books: dict[str, Books] = {}
    try:
        for revision in REVISIONS:
            name = f"pokna_bench_{uuid.uuid4().hex[:8]}"
            with admin.connect() as connection:
                connection.execute(text(f'CREATE DATABASE "{name}"'))
            url = make_url(cluster.url).set(database=name).render_as_string(hide_password=False)
            migrate.upgrade(url, revision)
            engines[revision] = engine = create_engine(url)
            books[revision] = open_books(engine, new_tenant_row(engine), wallets=options.wallets)
            post_deposits(engine, books[revision], options.preload)
            with engine.connect() as connection:
                connection.execute(text("ANALYZE"))
                connection.commit()
        ratios = []
        for round_ in range(options.rounds):
            order = REVISIONS if round_ % 2 == 0 else REVISIONS[::-1]
            cpu = {revision: phase(engines[revision], books[revision], options.calls) for revision in order}
            ratios.append(cpu[REVISIONS[1]] / cpu[REVISIONS[0]])
            print(
                f"round {round_ + 1}: 0024 {cpu[REVISIONS[0]]:.1f} us, 0025 {cpu[REVISIONS[1]]:.1f} us a call "
                f"({ratios[-1]:.3f}x)",
                flush=True,
            )
        print(
            f"median ratio 0025/0024: {statistics.median(ratios):.3f}x over {options.rounds} rounds",
            flush=True,
        )
    finally:
        for engine in engines.values():
            engine.dispose()
        admin.dispose()
        cluster.stop()


if __name__ == "__main__":
    main()
