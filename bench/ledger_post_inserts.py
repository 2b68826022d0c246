"""How `ledger_post()` inserts its rows, measured on Citus and on one PostgreSQL (issue 35, migration 0017).

The head's function (service/pokna/sql/ledger_post.sql) inserts each transaction and then its postings, one
`INSERT ... VALUES` each. The alternative asked for was one `INSERT ... SELECT` from the document per table
(`SET_BASED` below: the same function with the loop replaced). Both read the same document, built by the
service's own `batch_document`. On each server (a Citus coordinator with two workers, and a plain
PostgreSQL from the same binaries, each migrated), one connection calls `ledger_post()` in autocommit,
alternating the two bodies round by round (each installed by CREATE OR REPLACE, its first calls dropped),
for two batches: a deposit's (1 transaction, 2 postings) and a game step's (2 transactions, 4 postings).
Reported: the median milliseconds per call of each body.

    cd bench && ../.venv/bin/python ledger_post_inserts.py [--rounds 6] [--calls 60]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psycopg
from games_support import BENCH  # noqa: F401  (puts tests/ on sys.path)

from pokna.db import migrate
from pokna.db.engine import make_engine
from pokna.ledger.drafts import draft_of, unchained
from pokna.ledger.model import AccountTransfer
from pokna.ledger.posting_batch import batch_document
from support.citus import citus_bindir, start_citus  # type: ignore[import-not-found,unused-ignore]
from support.driver import create_tenant, open_account  # type: ignore[import-not-found,unused-ignore]
from support.postgres import start_cluster  # type: ignore[import-not-found,unused-ignore]
from support.sessions import make_sessionmaker, unit_of_work  # type: ignore[import-not-found,unused-ignore]

SOURCE = Path(__file__).resolve().parents[1] / "service" / "pokna" / "sql" / "ledger_post.sql"
LOOP_FROM = "    FOR v_transaction IN\n"
LOOP_TO = "    UPDATE ledger_head SET"
SET_BASED = """    FOR v_transaction IN
        SELECT * FROM jsonb_to_recordset(p_batch->'transactions') AS t(before_prev bytea, before_seq bytea, rest bytea)
    LOOP
        v_seq := v_seq + 1;
        v_hash := encode(sha256(v_transaction.before_prev || convert_to(v_hash, 'UTF8') || v_transaction.before_seq
            || convert_to(v_seq::text, 'UTF8') || v_transaction.rest), 'hex');
        hashes := hashes || v_hash;
    END LOOP;
    INSERT INTO journal_transaction (id, tenant_id, chain, seq, kind, reference, metadata, posting_count,
        prev_hash, hash, created_at)
    SELECT t.id, p_tenant_id, v_chain, first_seq + t.n - 1, t.kind, t.reference, t.metadata::json,
        jsonb_array_length(t.postings), coalesce(hashes[t.n - 1], first_prev_hash), hashes[t.n], t.created_at
    FROM ROWS FROM (jsonb_to_recordset(p_batch->'transactions') AS (id text, kind text, reference text,
            metadata text, created_at timestamptz, postings jsonb)) WITH ORDINALITY
        AS t(id, kind, reference, metadata, created_at, postings, n)
    ORDER BY t.n;
    INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency, created_at)
    SELECT p.id, p_tenant_id, t.id, p.n - 1, p.account_id, p.amount, p.currency, t.created_at
    FROM ROWS FROM (jsonb_to_recordset(p_batch->'transactions') AS (id text, created_at timestamptz,
            postings jsonb)) WITH ORDINALITY AS t(id, created_at, postings, n),
        ROWS FROM (jsonb_to_recordset(t.postings) AS (id text, account_id text, amount bigint, currency text))
            WITH ORDINALITY AS p(id, account_id, amount, currency, n)
    ORDER BY t.n, p.n;

"""


def bodies() -> dict[str, str]:
    source = SOURCE.read_text(encoding="utf-8")
    function = source[source.index("CREATE OR REPLACE FUNCTION") :]
    start, end = function.index(LOOP_FROM), function.index(LOOP_TO)
    return {"row at a time (head)": function, "set-based": function[:start] + SET_BASED + function[end:]}


@contextmanager
def servers() -> Iterator[dict[str, str]]:
    with ExitStack() as stack:
        plain = start_cluster(bindir=citus_bindir())
        stack.callback(plain.stop)
        citus = start_citus()
        stack.callback(citus.stop)
        urls = {"postgres": plain.url, "citus": citus.new_database("pokna_bench")}
        for url in urls.values():
            migrate.upgrade(url)
        yield urls


def measure(url: str, rounds: int, calls: int) -> dict[str, dict[int, float]]:
    engine = make_engine(url)
    tenant_id = create_tenant(engine, "bench").id
    with unit_of_work(make_sessionmaker(engine)) as session:
        house, other, funding = (
            open_account(session, tenant_id=tenant_id, kind="house").id for _ in range(3)
        )
    engine.dispose()
    currency_of = dict.fromkeys((house, other, funding), "CREDIT")

    def document(transactions: int) -> str:
        transfers = [
            AccountTransfer("adjustment", funding, house, 1),
            AccountTransfer("adjustment", funding, other, 1),
        ]
        drafts = [draft_of(t.kind, t.postings(), None, {"bench": "1"}) for t in transfers[:transactions]]
        written = [unchained(tenant_id, draft, currency_of, 3) for draft in drafts]
        return json.dumps(batch_document(sorted(currency_of), {}, written, 3).as_json())

    timings: dict[str, dict[int, list[float]]] = {name: {1: [], 2: []} for name in bodies()}
    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as connection:
        for _ in range(rounds):
            for name, body in bodies().items():
                connection.execute(body)
                for transactions in (1, 2):
                    for call in range(calls):
                        batch = document(transactions)
                        started = time.perf_counter()
                        row = connection.execute(
                            "SELECT status FROM ledger_post(%s, %s::jsonb)", (tenant_id, batch)
                        ).fetchone()
                        if call >= 10:  # the first calls plan the new body
                            timings[name][transactions].append((time.perf_counter() - started) * 1000)
                        if row is None or row[0] != "posted":
                            raise RuntimeError(f"ledger_post() answered {row}")
        connection.execute(bodies()["row at a time (head)"])
    return {name: {n: statistics.median(values) for n, values in by.items()} for name, by in timings.items()}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=60)
    args = parser.parse_args()
    with servers() as urls:
        for server, url in urls.items():
            for name, medians in measure(url, args.rounds, args.calls).items():
                print(
                    f"{server:8}  {name:22}  1 transaction, 2 postings: {medians[1]:6.2f} ms   "
                    f"2 transactions, 4 postings: {medians[2]:6.2f} ms",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
