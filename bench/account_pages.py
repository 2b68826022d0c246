"""What a page of `GET /v1/accounts/{id}/transactions` costs PostgreSQL as the account's history grows: the
statements of pokna.ledger.reads (ENTRIES, the first page; ENTRIES_AFTER, a page after the 50th newest
transaction) of whichever tree is on PYTHONPATH, on a throwaway cluster migrated by that tree, for the
tenant's funding account, which every deposit posts to (deposits of support.ledger_history, 500 a
ledger_post() call). Each statement runs `--runs` times under EXPLAIN (ANALYZE, BUFFERS) after ANALYZE;
prints the median execution time, the shared buffers and the posting rows read, at each size.

    PYTHONPATH=<tree>/service:<tree>/verifier .venv/bin/python bench/account_pages.py [--postings 3000 30000]

Run it with this tree's bench/ and tests/support (the books are written the same way for both trees) and the
tree to measure on PYTHONPATH: bench/README.md, "An account's page".
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any

from ledger_support import migrated_postgres
from sqlalchemy import Connection, create_engine

from pokna.ledger.reads import ENTRIES, ENTRIES_AFTER
from support.ledger_history import Books, new_tenant_row, open_books, post_deposits

PAGE = 10
FIFTIETH = (
    "SELECT t.id FROM posting AS p JOIN journal_transaction AS t ON t.tenant_id = p.tenant_id "
    "AND t.id = p.transaction_id WHERE p.tenant_id = %(tenant_id)s AND p.account_id = %(account_id)s "
    "ORDER BY t.created_at DESC, t.id DESC OFFSET 49 LIMIT 1"
)


def _rows_read(node: dict[str, Any], relation: str) -> float:
    own = 0.0
    if node.get("Relation Name") == relation:
        own = (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node["Actual Loops"]
    return own + sum(_rows_read(child, relation) for child in node.get("Plans", []))


def measure(connection: Connection, statement: str, values: dict[str, Any], runs: int) -> dict[str, float]:
    times, buffers, rows = [], [], []
    for _ in range(runs):
        found = connection.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, values)
        document = found.scalar_one()[0]
        plan = document["Plan"]
        times.append(document["Execution Time"])
        buffers.append(plan["Shared Hit Blocks"] + plan["Shared Read Blocks"])
        rows.append(_rows_read(plan, "posting"))
    return {
        "ms": statistics.median(times),
        "buffers": statistics.median(buffers),
        "rows": statistics.median(rows),
    }


def report(connection: Connection, books: Books, postings: int, runs: int) -> None:
    connection.exec_driver_sql("ANALYZE posting")
    connection.exec_driver_sql("ANALYZE journal_transaction")
    values: dict[str, Any] = {"tenant_id": books.tenant_id, "account_id": books.funding, "limit": PAGE + 1}
    fiftieth = connection.exec_driver_sql(FIFTIETH, values).scalar_one()
    for name, statement, more in (
        ("first page", ENTRIES, {}),
        ("after the 50th", ENTRIES_AFTER, {"after": fiftieth}),
    ):
        figures = measure(connection, statement, {**values, **more}, runs)
        print(
            f"{postings:>7} postings  {name:<15} {figures['ms']:8.3f} ms  {figures['buffers']:6.0f} buffers  "
            f"{figures['rows']:6.0f} posting rows read",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--postings", type=int, nargs="+", default=[3000], help="sizes of the account's history"
    )
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    with migrated_postgres() as url:
        engine = create_engine(url)
        try:
            books = open_books(engine, new_tenant_row(engine))
            written = 0
            for size in sorted(options.postings):
                post_deposits(engine, books, size - written, seed=size)
                written = size
                with engine.connect() as connection:
                    report(connection, books, size, options.runs)
        finally:
            engine.dispose()
    print(f"(pokna from {sys.modules['pokna'].__file__})", file=sys.stderr)


if __name__ == "__main__":
    main()
