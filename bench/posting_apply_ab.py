"""The posting trigger a row at a time against one balance UPDATE per statement (issues 44 and 45).

The head's `trg_posting_apply` (service/pokna/sql/ledger_posting_apply.sql) is a row-level AFTER INSERT
trigger: one `UPDATE account` per posting, two a deposit. The alternative asked for: a statement-level
AFTER INSERT trigger over the transition table (`REFERENCING NEW TABLE AS new_postings`) that reads the
statement's postings into arrays (a statement that names no distributed table, so Citus leaves it alone)
and moves every balance in one `UPDATE account ... FROM unnest(arrays)`. Bodies measured beside the head's
(`row`), each installed as its own function and swapped in by dropping and creating the trigger:

- `checked`: every check the head's trigger makes, for any statement (postings of several tenants and
  transactions): the transactions' declared counts read in the UPDATE's one subquery, the account's tenant
  and currency in its WHERE, a held wallet with any debit left out (a debit netted against a credit must
  still be refused). A refusal here raises a bare 23000 (the measured calls never refuse);
- `single`: the same for a statement of one tenant and one transaction (every INSERT `ledger_post()`
  makes), the transaction's count a scalar subquery as in the head's trigger;
- `grouped`: every check, for any statement, one UPDATE per transaction of the statement (one for every
  INSERT `ledger_post()` makes) that names no other relation: the legs' sums and the account's expected
  currency and debit taken from the arrays by `array_position`, the transaction's count a scalar subquery
  as in the head's trigger; the best of the faithful ones;
- `unchecked`: `grouped`'s UPDATE without the transaction's subquery, currency or hold (not a candidate);
- `minimal`: `checked`'s form (`UPDATE ... FROM unnest`) without any check (not a candidate);
- `read` and `none`, to take the time apart (not in the default list; they move no balance, so the books
  are off afterwards): `read` only reads the statement's postings into arrays, `none` returns at once.

On each server (a plain PostgreSQL, and a Citus coordinator with two workers, from the same binaries,
migrated), one tenant with a funding account, a wallet and `--wallets` more wallets, `--preload` deposits
posted with the head's trigger, then ANALYZE. Then `--pairs` rounds, the variants' order reversed every
other round: each variant in turn installed, and one connection to the node holding the tenant's shard
(on Citus the worker, where a delegated `ledger_post()` runs) calls `ledger_post()` of one deposit
`--calls` times in autocommit. Reported: the backend's CPU (user + system, /proc/<pid>/stat) per call
over the last three quarters of the calls; the machine is shared, so compare within a round. On Citus the
variants get `plan_cache_mode = force_custom_plan`, as `pokna db upgrade` gives the head's trigger
(pokna.db.distribution.WORKER_FUNCTION_SETTINGS). Run from the repository root (the servers refuse root:
the harness runs them as their own user):

    PYTHONPATH=service:verifier .venv/bin/python bench/posting_apply_ab.py [--calls 500] [--pairs 4]

Measured at `0024_game_write_checks` (bench/README.md). Since `0025_posting_created_at` the head's trigger
also compares a posting's `created_at` with its transaction's, in the same subquery; the statement bodies
above do not, so a run against a later head favours them by that comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path

import psycopg
from games_support import BENCH  # noqa: F401  (puts tests/ on sys.path)
from sqlalchemy import create_engine

from pokna.db import migrate
from pokna.db.models.tenant import Tenant
from pokna.db.types import new_id, utc_now
from pokna.ledger.drafts import draft_of, unchained
from pokna.ledger.model import DEFAULT_CURRENCY, AccountTransfer
from pokna.ledger.posting_batch import batch_document
from support.citus import CitusCluster, citus_bindir, start_citus  # type: ignore[import-not-found,unused-ignore]
from support.driver import funding_account, open_account  # type: ignore[import-not-found,unused-ignore]
from support.postgres import start_cluster  # type: ignore[import-not-found,unused-ignore]
from support.sessions import make_sessionmaker, unit_of_work  # type: ignore[import-not-found,unused-ignore]

CHAIN = 3
HEAD_TRIGGER = "CREATE TRIGGER trg_posting_apply AFTER INSERT ON posting FOR EACH ROW EXECUTE FUNCTION ledger_posting_apply()"

CHECKED = """
    FOR v IN
        SELECT a.tenant_id, a.account_ids, a.amounts, a.currencies, a.debited, t.transaction_ids, t.legs
        FROM (
            SELECT tenant_id, array_agg(account_id) AS account_ids, array_agg(amount) AS amounts,
                array_agg(currency) AS currencies, array_agg(debited) AS debited
            FROM (
                SELECT tenant_id, account_id, sum(amount) AS amount,
                    CASE WHEN min(currency) = max(currency) THEN min(currency) END AS currency,
                    bool_or(amount < 0) AS debited
                FROM new_postings GROUP BY tenant_id, account_id
            ) AS by_account GROUP BY tenant_id
        ) AS a JOIN (
            SELECT tenant_id, array_agg(transaction_id) AS transaction_ids, array_agg(leg) AS legs
            FROM (
                SELECT tenant_id, transaction_id, max(leg) AS leg FROM new_postings GROUP BY tenant_id, transaction_id
            ) AS by_transaction GROUP BY tenant_id
        ) AS t USING (tenant_id)
    LOOP
        UPDATE account SET balance = account.balance + moved.amount
            FROM unnest(v.account_ids, v.amounts, v.currencies, v.debited) AS moved(account_id, amount, currency, debited)
            WHERE account.tenant_id = v.tenant_id AND account.id = moved.account_id
                AND account.currency = moved.currency
                AND (account.roll_hold_game_id IS NULL OR NOT moved.debited)
                AND (
                    SELECT count(*) FROM journal_transaction AS txn
                        JOIN unnest(v.transaction_ids, v.legs) AS declared(id, leg) ON txn.id = declared.id
                    WHERE txn.tenant_id = v.tenant_id AND declared.leg < txn.posting_count
                ) = cardinality(v.transaction_ids);
        GET DIAGNOSTICS v_moved = ROW_COUNT;
        IF v_moved < cardinality(v.account_ids) THEN
            RAISE EXCEPTION 'refused' USING ERRCODE = '23000';
        END IF;
    END LOOP;"""

SINGLE = """
    SELECT min(tenant_id), min(transaction_id), max(leg), array_agg(account_id), array_agg(amount),
            array_agg(currency), array_agg(debited)
        INTO v_tenant, v_transaction_id, v_leg, v_account_ids, v_amounts, v_currencies, v_debited
        FROM (
            SELECT min(tenant_id) AS tenant_id, min(transaction_id) AS transaction_id, max(leg) AS leg, account_id,
                sum(amount) AS amount, CASE WHEN min(currency) = max(currency) THEN min(currency) END AS currency,
                bool_or(amount < 0) AS debited
            FROM new_postings GROUP BY account_id
        ) AS by_account;
    UPDATE account SET balance = account.balance + moved.amount
        FROM unnest(v_account_ids, v_amounts, v_currencies, v_debited) AS moved(account_id, amount, currency, debited)
        WHERE account.tenant_id = v_tenant AND account.id = moved.account_id
            AND account.currency = moved.currency
            AND (account.roll_hold_game_id IS NULL OR NOT moved.debited)
            AND v_leg < (
                SELECT txn.posting_count FROM journal_transaction AS txn
                WHERE txn.tenant_id = v_tenant AND txn.id = v_transaction_id
            );
    GET DIAGNOSTICS v_moved = ROW_COUNT;
    IF v_moved < cardinality(v_account_ids) THEN
        RAISE EXCEPTION 'refused' USING ERRCODE = '23000';
    END IF;"""

MINIMAL = """
    SELECT min(tenant_id), array_agg(account_id), array_agg(amount) INTO v_tenant, v_account_ids, v_amounts
        FROM (
            SELECT tenant_id, account_id, sum(amount) AS amount FROM new_postings GROUP BY tenant_id, account_id
        ) AS by_account;
    UPDATE account SET balance = account.balance + moved.amount
        FROM unnest(v_account_ids, v_amounts) AS moved(account_id, amount)
        WHERE account.tenant_id = v_tenant AND account.id = moved.account_id;"""

DECLARATIONS = """
    v record;
    v_moved int;
    v_tenant text;
    v_transaction_id text;
    v_leg int;
    v_account_ids text[];
    v_amounts bigint[];
    v_currencies text[];
    v_debited boolean[];"""

READ = """
    SELECT min(tenant_id), array_agg(account_id), array_agg(amount) INTO v_tenant, v_account_ids, v_amounts
        FROM (
            SELECT tenant_id, account_id, sum(amount) AS amount FROM new_postings GROUP BY tenant_id, account_id
        ) AS by_account;"""

GROUPED = """
    FOR v IN
        SELECT tenant_id, transaction_id, max(leg) AS leg, array_agg(account_id) AS account_ids,
            array_agg(amount) AS amounts, array_agg(currency) AS currencies, array_agg(debited) AS debited
        FROM (
            SELECT tenant_id, transaction_id, account_id, max(leg) AS leg, sum(amount) AS amount,
                CASE WHEN min(currency) = max(currency) THEN min(currency) END AS currency,
                bool_or(amount < 0) AS debited
            FROM new_postings GROUP BY tenant_id, transaction_id, account_id
        ) AS by_account
        GROUP BY tenant_id, transaction_id
    LOOP
        UPDATE account SET balance = balance + v.amounts[array_position(v.account_ids, id)]
            WHERE tenant_id = v.tenant_id AND id = ANY(v.account_ids)
                AND currency = v.currencies[array_position(v.account_ids, id)]
                AND (roll_hold_game_id IS NULL OR NOT v.debited[array_position(v.account_ids, id)])
                AND v.leg < (
                    SELECT txn.posting_count FROM journal_transaction AS txn
                    WHERE txn.tenant_id = v.tenant_id AND txn.id = v.transaction_id
                );
        GET DIAGNOSTICS v_moved = ROW_COUNT;
        IF v_moved < cardinality(v.account_ids) THEN
            RAISE EXCEPTION 'refused' USING ERRCODE = '23000';
        END IF;
    END LOOP;"""

UNCHECKED = """
    SELECT min(tenant_id), array_agg(account_id), array_agg(amount) INTO v_tenant, v_account_ids, v_amounts
        FROM (
            SELECT tenant_id, account_id, sum(amount) AS amount FROM new_postings GROUP BY tenant_id, account_id
        ) AS by_account;
    UPDATE account SET balance = balance + v_amounts[array_position(v_account_ids, id)]
        WHERE tenant_id = v_tenant AND id = ANY(v_account_ids);"""

STATEMENT_BODIES = {
    "grouped": GROUPED,
    "unchecked": UNCHECKED,
    "checked": CHECKED,
    "single": SINGLE,
    "minimal": MINIMAL,
    "read": READ,
    "none": "",
}


def function(variant: str) -> str:
    return (
        f"CREATE OR REPLACE FUNCTION ledger_posting_apply_{variant}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"DECLARE{DECLARATIONS}\nBEGIN{STATEMENT_BODIES[variant]}\n    RETURN NULL;\nEND\n$$"
    )


def trigger(variant: str) -> str:
    if variant == "row":
        return HEAD_TRIGGER
    return (
        "CREATE TRIGGER trg_posting_apply_ab AFTER INSERT ON posting REFERENCING NEW TABLE AS new_postings "
        f"FOR EACH STATEMENT EXECUTE FUNCTION ledger_posting_apply_{variant}()"
    )


def execute(url: str, citus: bool, *statements: str) -> None:
    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as connection:
        if citus:  # as pokna.db.distribution.CITUS_SETTINGS: the triggers touch their own shard only
            connection.execute("SET citus.enable_unsafe_triggers TO on")
            connection.execute("SET citus.multi_shard_modify_mode TO 'sequential'")
        for statement in statements:
            connection.execute(statement)


def install(url: str, citus: bool, variant: str) -> None:
    drops = (
        "DROP TRIGGER IF EXISTS trg_posting_apply_ab ON posting",
        "DROP TRIGGER IF EXISTS trg_posting_apply ON posting",
    )
    execute(url, citus, *drops, trigger(variant))


class Ledger:
    """One tenant's funding account and wallet on a server, and where its rows are."""

    def __init__(self, url: str, wallets: int) -> None:
        engine = create_engine(url)
        self.tenant_id = new_id("ten")
        with unit_of_work(make_sessionmaker(engine)) as session:
            session.add(Tenant(id=self.tenant_id, name="Bench", created_at=utc_now()))
        self.funding = funding_account(engine, self.tenant_id, chain=CHAIN).id
        self.wallet = open_account(engine, tenant_id=self.tenant_id, kind="player_wallet").id
        for _ in range(wallets):  # a tenant of more than two accounts, so a scan of them all would show
            open_account(engine, tenant_id=self.tenant_id, kind="player_wallet")
        engine.dispose()

    def deposits(self, count: int) -> list[str]:
        accounts = sorted((self.funding, self.wallet))
        currencies = dict.fromkeys(accounts, DEFAULT_CURRENCY)
        documents = []
        for _ in range(count):
            transfer = AccountTransfer("deposit", self.funding, self.wallet, 1)
            written = unchained(
                self.tenant_id, draft_of("adjustment", transfer.postings(), None, None), currencies, CHAIN
            )
            documents.append(json.dumps(batch_document(accounts, {}, [written], CHAIN).as_json()))
        return documents


def backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_per_call(url: str, tenant_id: str, documents: list[str]) -> float:
    """Milliseconds of the backend's CPU per `ledger_post()` call, over the last three quarters of the calls
    (the first plan the new trigger)."""
    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as connection:
        row = connection.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        skipped = len(documents) // 4
        started = 0.0
        for index, document in enumerate(documents):
            if index == skipped:
                started = backend_cpu(row[0])
            posted = connection.execute(
                "SELECT status FROM ledger_post(%s, %s::jsonb)", (tenant_id, document)
            )
            status = posted.fetchone()
            if status is None or status[0] != "posted":
                raise RuntimeError(f"ledger_post() answered {status}")
        return (backend_cpu(row[0]) - started) / (len(documents) - skipped) * 1000


def books_off(url: str) -> int:
    """Accounts whose balance is not the sum of their postings."""
    with psycopg.connect(url.replace("+psycopg", "")) as connection:
        row = connection.execute(
            "SELECT count(*) FROM account AS a WHERE balance <> coalesce((SELECT sum(amount) FROM posting AS p "
            "WHERE p.tenant_id = a.tenant_id AND p.account_id = a.id), 0)"
        ).fetchone()
        assert row is not None
        return int(row[0])


def shard_node_url(citus: CitusCluster, url: str, tenant_id: str) -> str:
    with psycopg.connect(url.replace("+psycopg", "")) as connection:
        row = connection.execute(
            "SELECT nodeport, current_database() FROM citus_shards WHERE table_name = 'posting'::regclass "
            "AND shardid = get_shard_id_for_distribution_column('posting', %s::text)",
            (tenant_id,),
        ).fetchone()
        assert row is not None
    (worker,) = [node for node in citus.workers if node.port == row[0]]
    return citus.url(worker, row[1])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--wallets", type=int, default=200)
    parser.add_argument("--preload", type=int, default=1000)
    parser.add_argument("--engines", default="postgres,citus")
    parser.add_argument("--variants", default="row,checked,single,grouped,unchecked,minimal")
    args = parser.parse_args()
    variants = args.variants.split(",")
    plain = start_cluster(bindir=citus_bindir())
    citus = start_citus()
    try:
        citus_url = citus.new_database("pokna_bench")
        # (name, where the DDL goes, is it Citus, the tenant, where its ledger_post() runs)
        engines: list[tuple[str, str, bool, Ledger, str]] = []
        for name, url, on_citus in (("postgres", plain.url, False), ("citus", citus_url, True)):
            if name not in args.engines.split(","):
                continue
            migrate.upgrade(url)
            for variant in variants:
                if variant != "row":
                    execute(url, on_citus, function(variant))
                if variant != "row" and on_citus:
                    settings = f"ALTER FUNCTION ledger_posting_apply_{variant}() SET plan_cache_mode = force_custom_plan"
                    execute(url, True, settings)
            ledger = Ledger(url, args.wallets)
            node = shard_node_url(citus, url, ledger.tenant_id) if on_citus else url
            cpu_per_call(node, ledger.tenant_id, ledger.deposits(args.preload))
            execute(url, on_citus, "ANALYZE")
            engines.append((name, url, on_citus, ledger, node))
        results: dict[tuple[str, str], list[float]] = {}
        for pair in range(args.pairs):
            for variant in variants if pair % 2 == 0 else variants[::-1]:
                for name, url, on_citus, ledger, node in engines:
                    install(url, on_citus, variant)
                    milliseconds = cpu_per_call(node, ledger.tenant_id, ledger.deposits(args.calls))
                    results.setdefault((name, variant), []).append(milliseconds)
                    load = os.getloadavg()[0]
                    print(
                        f"round {pair}  {name:8}  {variant:8}  {milliseconds:.3f} ms a call  (load {load:.1f})",
                        flush=True,
                    )
        for name, url, on_citus, _, _ in engines:
            install(url, on_citus, "row")
            print(f"{name}: accounts whose balance is not the sum of their postings: {books_off(url)}")
        for (name, variant), values in results.items():
            rounds = " ".join(f"{value:.3f}" for value in values)
            print(
                f"{name:8}  {variant:8}  median {statistics.median(values):.3f} ms a call  (rounds: {rounds})"
            )
    finally:
        citus.stop()
        plain.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
