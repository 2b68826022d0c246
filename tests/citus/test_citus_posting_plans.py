"""A posting's lookup of its transaction on a Citus worker reads that one row, however small the tenant's
shard was when the worker's connection first planned it (issue 45: the function's `plan_cache_mode` on
Citus, pokna.db.distribution.WORKER_FUNCTION_SETTINGS; bench/README.md, "Issue 45: why the workers' CPU per
request grew").

The posting trigger (`ledger_posting_apply()`) reads its transaction's `posting_count` by the transaction's
key. Citus keeps the plan of a statement like that, inside a delegated call, for as long as the worker's
connection lives, and ANALYZE of the shard does not replan it; a plan made while the shard was empty reads
the tenant's whole journal through the `(tenant_id, chain, seq)` index on every posting. The test makes
that history on one connection (its coordinator backend keeps one worker connection): a few postings while
the shard is empty, then the shard grown by another connection and analyzed, then postings on the first
connection again, counting the rows they read from the shard (pg_stat_user_tables and _indexes on the
worker, flushed when the worker's backends end).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.pool import NullPool

from pokna.db.models.tenant import Tenant
from pokna.db.types import new_id, utc_now
from pokna.ledger.drafts import draft_of, unchained
from pokna.ledger.model import DEFAULT_CURRENCY, AccountTransfer
from pokna.ledger.posting_batch import batch_document
from support.citus import CitusCluster
from support.driver import funding_account, open_account
from support.sessions import make_sessionmaker, unit_of_work

pytestmark = pytest.mark.xdist_group("citus")

CHAIN = 3
GROWN = 1500  # journal rows the shard holds when the first connection posts again
MEASURED = 30  # postings, each a transaction of two legs, on the first connection afterwards
# What a lookup by key reads, with room for the chain link's and the insert's own reads: a row or two a leg.
ROWS_PER_LEG = 10


def _post(connection: Connection, tenant_id: str, accounts: tuple[str, str], count: int) -> None:
    """`count` deposits of 1 in one ledger_post() call, in a transaction of the connection's own."""
    funding, wallet = accounts
    drafts = [
        draft_of("adjustment", AccountTransfer("deposit", funding, wallet, 1).postings(), None, None)
        for _ in range(count)
    ]
    currencies = dict.fromkeys(accounts, DEFAULT_CURRENCY)
    written = [unchained(tenant_id, draft, currencies, CHAIN) for draft in drafts]
    document = batch_document(sorted(accounts), {}, written, CHAIN)
    with connection.begin():
        status = connection.scalar(
            text("SELECT status FROM ledger_post(:tenant, CAST(:batch AS jsonb))"),
            {"tenant": tenant_id, "batch": json.dumps(document.as_json())},
        )
    assert status == "posted"


@pytest.fixture
def coordinator(citus_database_url: str) -> Iterator[Engine]:
    # No pool: a connection closed is a coordinator backend ended, and with it its worker connections.
    engine = create_engine(citus_database_url, poolclass=NullPool)
    yield engine
    engine.dispose()


def _tenant_with_accounts(engine: Engine) -> tuple[str, tuple[str, str]]:
    tenant_id = new_id("ten")
    with unit_of_work(make_sessionmaker(engine)) as session:
        session.add(Tenant(id=tenant_id, name="Chalmun's Cantina", created_at=utc_now()))
    # The accounts on a connection of their own (support.driver), which sees the tenant once committed.
    funding = funding_account(engine, tenant_id, chain=CHAIN).id
    wallet = open_account(engine, tenant_id=tenant_id, kind="player_wallet").id
    return tenant_id, (funding, wallet)


def _shard_worker(engine: Engine, cluster: CitusCluster, tenant_id: str) -> tuple[str, str]:
    """The URL of the worker holding the tenant's journal shard, and the shard's name."""
    with engine.connect() as connection:
        shard, port = connection.execute(
            text(
                "SELECT shardid, nodeport FROM citus_shards WHERE table_name = 'journal_transaction'::regclass "
                "AND shardid = get_shard_id_for_distribution_column('journal_transaction', CAST(:tenant AS text))"
            ),
            {"tenant": tenant_id},
        ).one()
        database = connection.scalar(text("SELECT current_database()"))
    (worker,) = [node for node in cluster.workers if node.port == port]
    return cluster.url(worker, database), f"journal_transaction_{shard}"


def _rows_read(worker: Connection, shard: str) -> int:
    """Rows the shard's scans have read, by index or sequentially, as the worker's statistics hold them."""
    read = worker.scalar(
        text(
            "SELECT coalesce(t.seq_tup_read, 0) + coalesce(sum(i.idx_tup_read), 0) "
            "FROM pg_stat_user_tables t LEFT JOIN pg_stat_user_indexes i ON i.relid = t.relid "
            "WHERE t.relname = :shard GROUP BY t.seq_tup_read"
        ),
        {"shard": shard},
    )
    return int(read)


def _wait_until_gone(worker: Connection, coordinator_pids: list[int]) -> None:
    """Until the worker backends of these coordinator backends have ended (and flushed their statistics):
    Citus names each of its connections after its coordinator backend (`citus_internal gpid=...`)."""
    pattern = "|".join(str(pid) for pid in coordinator_pids)
    deadline = time.monotonic() + 60
    while True:
        left = worker.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name ~ "
                "('^citus_internal gpid=[0-9]*?0*(' || :pids || ')$')"
            ),
            {"pids": pattern},
        )
        if left == 0:
            return
        assert time.monotonic() < deadline, f"{left} worker backends of {coordinator_pids} still running"
        time.sleep(0.1)


def test_a_posting_reads_its_transaction_by_key_after_the_shard_grew_under_its_connection(
    coordinator: Engine, citus_cluster: CitusCluster
) -> None:
    tenant_id, accounts = _tenant_with_accounts(coordinator)
    worker_url, shard = _shard_worker(coordinator, citus_cluster, tenant_id)
    worker_engine = create_engine(worker_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with coordinator.connect() as first, worker_engine.connect() as worker:
        worker.execute(text("SET citus.override_table_visibility = off"))
        first_pid = int(first.scalar(text("SELECT pg_backend_pid()")))
        first.commit()
        # While the shard is empty: past PL/pgSQL's five custom plans, so the generic one is made and kept.
        for _ in range(8):
            _post(first, tenant_id, accounts, 1)
        with coordinator.connect() as second:
            second_pid = int(second.scalar(text("SELECT pg_backend_pid()")))
            second.commit()
            _post(second, tenant_id, accounts, GROWN)
            second.execute(text("ANALYZE journal_transaction"))
            second.commit()
        _wait_until_gone(worker, [second_pid])
        before = _rows_read(worker, shard)
        for _ in range(MEASURED):
            _post(first, tenant_id, accounts, 1)
        first.close()
        _wait_until_gone(worker, [first_pid])
        read = _rows_read(worker, shard) - before
    worker_engine.dispose()
    # Without the setting: about GROWN rows a leg (the tenant's journal, walked through the chain index).
    assert read <= MEASURED * 2 * ROWS_PER_LEG, f"{read} journal rows read for {MEASURED * 2} legs"


WARM = 20  # calls past PL/pgSQL's five custom plans, so a generic plan would be in use
COUNTED = 100  # calls whose memory is counted afterwards
# What a worker backend may grow by over COUNTED calls: without the setting about 0.24 MB a call.
GROWTH_BYTES = 4_000_000


def _backend_bytes(connection: Connection) -> int:
    return int(connection.scalar(text("SELECT sum(total_bytes) FROM pg_backend_memory_contexts")))


def test_a_worker_backend_does_not_grow_with_the_postings_it_writes(
    coordinator: Engine, citus_cluster: CitusCluster
) -> None:
    """ledger_post() called on the worker that holds the tenant's shard, as a delegated call runs it there.
    Under a generic plan Citus plans each routed statement's shard query again at every execution and keeps
    every plan for the connection's life (pokna.db.distribution.WORKER_FUNCTION_SETTINGS says why)."""
    tenant_id, accounts = _tenant_with_accounts(coordinator)
    worker_url, _ = _shard_worker(coordinator, citus_cluster, tenant_id)
    worker_engine = create_engine(worker_url, poolclass=NullPool)
    with worker_engine.connect() as worker:
        for _ in range(WARM):
            _post(worker, tenant_id, accounts, 1)
        before = _backend_bytes(worker)
        worker.commit()
        for _ in range(COUNTED):
            _post(worker, tenant_id, accounts, 1)
        grown = _backend_bytes(worker) - before
        worker.commit()
    worker_engine.dispose()
    assert grown <= GROWTH_BYTES, f"the worker backend grew by {grown} bytes over {COUNTED} postings"
