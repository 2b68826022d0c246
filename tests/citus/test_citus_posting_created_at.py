"""Migration 0025 on a distributed database that already holds postings, as an operator's Citus database at
0024 is: the backfill runs through the coordinator on every shard (posting and journal_transaction are
colocated by tenant), the append-only trigger dropped for it is back on every shard, and the new
ledger_post() posts. The Citus tier's other tests migrate an empty database before distributing it."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from pokna.db import distribution, migrate
from pokna.db.engine import make_engine
from support.citus import CitusCluster
from support.ledger_history import new_tenant_row, open_books, post_deposits

MATCHING = (
    "SELECT count(*), count(*) FILTER (WHERE p.created_at = t.created_at) FROM posting AS p "
    "JOIN journal_transaction AS t ON t.tenant_id = p.tenant_id AND t.id = p.transaction_id "
    "WHERE p.tenant_id = :tenant"
)


def test_0025_backfills_a_distributed_posting_table(citus_cluster: CitusCluster) -> None:
    name = f"pokna_citus_{uuid.uuid4().hex[:10]}"
    url = citus_cluster.new_database(name)
    engine = make_engine(url)
    try:
        migrate.upgrade(url, "0024_game_write_checks")
        with engine.begin() as connection:
            assert distribution.distribute(connection)  # what `pokna db upgrade` did at 0024
        tenants = [
            open_books(engine, new_tenant_row(engine, name)) for name in ("Tosche Station", "Mos Eisley")
        ]
        for seed, books in enumerate(tenants):
            post_deposits(engine, books, 40, seed=seed, batch=20)
        migrate.upgrade(url)
        engine.dispose()
        for books in tenants:
            with engine.connect() as connection:
                assert tuple(connection.execute(text(MATCHING), {"tenant": books.tenant_id}).one()) == (
                    80,
                    80,
                )
            refusal = r"posting_\d+ is append-only; UPDATE refused"  # the trigger of the tenant's shard
            with pytest.raises(DBAPIError, match=refusal), engine.begin() as connection:
                connection.execute(
                    text("UPDATE posting SET amount = amount WHERE tenant_id = :tenant"),
                    {"tenant": books.tenant_id},
                )
            post_deposits(engine, books, 4, seed=7)
            with engine.connect() as connection:
                assert tuple(connection.execute(text(MATCHING), {"tenant": books.tenant_id}).one()) == (
                    88,
                    88,
                )
    finally:
        engine.dispose()
        citus_cluster.drop_database(name)
