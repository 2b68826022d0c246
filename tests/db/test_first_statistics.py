"""A fresh database's tables get statistics as soon as they hold rows (pokna.db.first_statistics), so a plan
a connection made and kept while they were nearly empty is made again, by key (bench/README.md, "The
soak's decline").

The plans are those of two look-ups by (tenant, id) as the service makes them: the posting trigger's of its
transaction (service/pokna/sql/ledger_posting_apply.sql) and an account's read (pokna.ledger.reads.ACCOUNT).
Each is prepared on one connection and executed past PostgreSQL's five custom plans while the tables are
nearly empty, so the connection keeps a generic plan, as a pool's connection keeps psycopg's prepared
statements and PL/pgSQL its statements' plans. Then the tables are filled by another connection, and the
kept plan is run again, under EXPLAIN (ANALYZE, BUFFERS): by the key it reads a page or two of the index and
one of the table, where through the tenant's index it read every row of the tenant. The trigger's own plan is
held the same way: postings on one connection while the journal is nearly empty, then after it has filled,
counting the journal's index entries read (pg_stat_user_indexes)."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from pokna.db import first_statistics
from pokna.db.backend import conninfo_of
from pokna.db.types import utc_now
from pokna.ledger.accounts_aio import OPEN_ACCOUNT, new_account
from pokna.ledger.drafts import draft_of, unchained
from pokna.ledger.model import DEFAULT_CURRENCY, AccountKind, AccountTransfer
from pokna.ledger.posting_batch import batch_document
from support.driver import create_tenant, funding_account, open_account
from support.servers import serving

GROWN = 1500  # journal transactions (and accounts) the tenant has when the kept plans run again
# A look-up by key: the index's root and leaf and the row's page, with room for one more level.
BUFFERS_BY_KEY = 6

TRANSACTION = "SELECT posting_count FROM journal_transaction WHERE tenant_id = $1 AND id = $2"
ACCOUNT = "SELECT id, kind, external_id, currency, balance, created_at FROM account WHERE tenant_id = $1 AND id = $2"


# The activity counters the service reads (rows in a table) as the COMMIT answers, not up to a second later.
FLUSH = "SELECT pg_stat_force_next_flush()"


@pytest.fixture
def connection(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    # Its statements are prepared by the test itself, by name, not by psycopg after five executions.
    with psycopg.connect(conninfo_of(database_url), autocommit=True, prepare_threshold=None) as opened:
        yield opened


def _deposit(
    database: str | psycopg.Connection[Any], tenant_id: str, accounts: tuple[str, str], count: int
) -> list[str]:
    """`count` deposits of 1 in one ledger_post() call, committed, on a connection of its own or the one
    given; their transactions' ids."""
    funding, wallet = accounts
    drafts = [
        draft_of("adjustment", AccountTransfer("deposit", funding, wallet, 1).postings(), None, None)
        for _ in range(count)
    ]
    written = [unchained(tenant_id, draft, dict.fromkeys(accounts, DEFAULT_CURRENCY), 0) for draft in drafts]
    document = batch_document(sorted(accounts), {}, written, 0)
    with contextlib.ExitStack() as stack:
        poster = psycopg.connect(database) if isinstance(database, str) else database
        if isinstance(database, str):
            stack.enter_context(poster)
        with poster.transaction():
            status = poster.execute(
                "SELECT status FROM ledger_post(%s, %s::jsonb)", (tenant_id, json.dumps(document.as_json()))
            ).fetchone()
            poster.execute(FLUSH)
    assert status == ("posted",)
    return [transaction["id"] for transaction in document.as_json()["transactions"]]


def _funded_wallet(database_url: str) -> tuple[str, tuple[str, str]]:
    """A tenant, and the two accounts its deposits move between: (funding, wallet)."""
    tenant_id = create_tenant(database_url, "Chalmun's Cantina").id
    return tenant_id, (
        funding_account(database_url, tenant_id).id,
        open_account(database_url, tenant_id=tenant_id, kind="player_wallet").id,
    )


def _open_wallets(conninfo: str, tenant_id: str, count: int) -> None:
    now = utc_now()
    with psycopg.connect(conninfo) as opener, opener.cursor() as cursor:
        cursor.executemany(
            OPEN_ACCOUNT,
            [
                new_account(tenant_id, AccountKind.PLAYER_WALLET, DEFAULT_CURRENCY, None, now)
                for _ in range(count)
            ],
        )
        cursor.execute(FLUSH)


def _execute(name: str, *arguments: str) -> sql.Composed:
    """EXECUTE of a prepared statement (a utility statement: its arguments are literals, not parameters)."""
    return sql.SQL("EXECUTE {}({})").format(
        sql.Identifier(name), sql.SQL(", ").join(map(sql.Literal, arguments))
    )


def _kept_plan(connection: psycopg.Connection[Any], name: str, *arguments: str) -> dict[str, Any]:
    """The plan the connection keeps for the prepared statement, run once: its scan node."""
    quoted = ", ".join(f"'{argument}'" for argument in arguments)  # ids drawn by the service: no quotes
    explained = connection.execute(
        f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE {name}({quoted})"
    ).fetchone()
    assert explained is not None
    node: dict[str, Any] = explained[0][0]["Plan"]
    return node


def _buffers(node: dict[str, Any]) -> int:
    return int(node["Shared Hit Blocks"]) + int(node["Shared Read Blocks"])


def test_plans_kept_from_the_empty_tables_read_by_key_once_the_filled_tables_have_statistics(
    database_url: str, connection: psycopg.Connection[Any]
) -> None:
    conninfo = conninfo_of(database_url)
    for table in ("journal_transaction", "account"):
        _without_autovacuum(connection, table)
    tenant_id, accounts = _funded_wallet(database_url)
    (first,) = _deposit(conninfo, tenant_id, accounts, 1)
    # An account read whose row is not updated meanwhile (the deposits leave a chain of versions of theirs).
    read = open_account(database_url, tenant_id=tenant_id, kind="player_wallet").id

    connection.execute(f"PREPARE transaction_of(text, text) AS {TRANSACTION}")
    connection.execute(f"PREPARE account_of(text, text) AS {ACCOUNT}")
    for _ in range(6):  # five custom plans, then the generic one, kept
        connection.execute(_execute("transaction_of", tenant_id, first)).fetchone()
        connection.execute(_execute("account_of", tenant_id, read)).fetchone()
    kept = connection.execute(
        "SELECT name, generic_plans FROM pg_prepared_statements ORDER BY name"
    ).fetchall()
    assert kept == [("account_of", 1), ("transaction_of", 1)]

    last = _deposit(conninfo, tenant_id, accounts, GROWN)[-1]
    _open_wallets(conninfo, tenant_id, GROWN)
    # What `pokna serve` does within a second or two of the rows' commit (its thread's one look).
    with psycopg.connect(conninfo, autocommit=True) as watcher:
        first_statistics.analyze_filled(watcher, set())

    transaction = _kept_plan(connection, "transaction_of", tenant_id, last)
    account = _kept_plan(connection, "account_of", tenant_id, read)
    # Without statistics: `uq_journal_transaction_tenant_id_chain_seq` and `ix_account_tenant_id`, every row
    # of the tenant read and filtered on the id (hundreds of buffers each).
    assert (transaction.get("Index Name"), transaction["Actual Rows"]) == ("pk_journal_transaction", 1)
    assert (account.get("Index Name"), account["Actual Rows"]) == ("pk_account", 1)
    assert _buffers(transaction) <= BUFFERS_BY_KEY, transaction
    assert _buffers(account) <= BUFFERS_BY_KEY, account


def _analyzed(connection: psycopg.Connection[Any]) -> dict[str, int]:
    rows = connection.execute(
        "SELECT relname, analyze_count FROM pg_stat_user_tables WHERE schemaname = current_schema()"
    ).fetchall()
    return dict(rows)


def _without_autovacuum(connection: psycopg.Connection[Any], table: str) -> None:
    """Autovacuum may come round at any moment and analyze the table first (the service then has nothing to
    do): these tests are about the service's ANALYZE, so autovacuum leaves this table alone here."""
    connection.execute(
        sql.SQL("ALTER TABLE {} SET (autovacuum_enabled = false)").format(sql.Identifier(table))
    )


def test_a_table_is_analyzed_once_when_it_holds_enough_rows_and_an_empty_one_is_left_to_wait(
    database_url: str, connection: psycopg.Connection[Any]
) -> None:
    conninfo = conninfo_of(database_url)
    _without_autovacuum(connection, "account")
    tenant_id = create_tenant(database_url, "Mos Eisley").id
    tried: set[str] = set()
    assert first_statistics.analyze_filled(connection, tried)  # tables still empty: more to come
    assert tried == set()
    assert set(_analyzed(connection).values()) == {0}

    _open_wallets(conninfo, tenant_id, first_statistics.ROWS_WORTH_STATISTICS)
    assert first_statistics.analyze_filled(connection, tried)  # the journal, games, ... still empty
    assert tried == {"account"}
    assert {table for table, count in _analyzed(connection).items() if count} == {"account"}

    first_statistics.analyze_filled(connection, tried)
    assert _analyzed(connection)["account"] == 1  # not again: autovacuum keeps it from now on


def test_a_table_the_role_may_not_analyze_is_logged_as_skipped_not_as_analyzed(
    database_url: str, connection: psycopg.Connection[Any], caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL skips the ANALYZE of a table the role does not own with a WARNING, not an error, and
    psycopg drops a notice nobody handles: the log must not say the table was analyzed."""
    conninfo = conninfo_of(database_url)
    _without_autovacuum(connection, "account")
    _open_wallets(
        conninfo, create_tenant(database_url, "Mos Espa").id, first_statistics.ROWS_WORTH_STATISTICS
    )
    bystander = f"bystander_{uuid.uuid4().hex[:10]}"  # roles are the cluster's: a name of this test's own
    connection.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(bystander)))
    try:
        with (
            psycopg.connect(conninfo, user=bystander, autocommit=True) as not_owner,
            caplog.at_level(logging.INFO, "pokna.db"),
        ):
            tried: set[str] = set()
            first_statistics.analyze_filled(not_owner, tried)
    finally:
        connection.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(bystander)))
    assert tried == {"account"}  # tried once, not again at every look
    assert _analyzed(connection)["account"] == 0
    said = [
        (record.levelno, record.getMessage()) for record in caplog.records if "account" in record.getMessage()
    ]
    assert len(said) == 1, said
    level, message = said[0]
    assert level == logging.WARNING, said
    assert message.startswith("first statistics: account not analyzed"), said
    assert "skipping" in message, said  # PostgreSQL's own words, in the line


def test_pokna_serve_analyzes_a_table_once_it_holds_rows(database_url: str, tmp_path: Path) -> None:
    conninfo = conninfo_of(database_url)
    env = {"POKNA_DATABASE_URL": database_url, "POKNA_RATE_LIMIT_PER_SECOND": "0"}
    with (
        serving(env, tmp_path / "data", "--workers", "1"),
        psycopg.connect(conninfo, autocommit=True) as watching,
    ):
        _without_autovacuum(watching, "account")
        tenant_id = create_tenant(database_url, "Tosche Station").id
        _open_wallets(conninfo, tenant_id, first_statistics.ROWS_WORTH_STATISTICS)
        deadline = time.monotonic() + 60  # a tick or two is what it takes; autovacuum counts apart
        while _analyzed(watching)["account"] == 0:
            assert time.monotonic() < deadline, "the server did not analyze `account` within a minute"
            time.sleep(0.2)


def test_the_watch_has_ended_and_let_its_connection_go_when_its_block_ends(database_url: str) -> None:
    """`pokna serve` leaves the block before it stops an embedded cluster: a watch still connected then
    would be cut off mid-look and log the cluster's shutdown as an outage."""
    with psycopg.connect(conninfo_of(database_url), autocommit=True) as observer:
        with first_statistics.watching(conninfo_of(database_url)) as thread:
            deadline = time.monotonic() + 60
            while not observer.execute(
                "SELECT 1 FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name = 'pokna first statistics'"
            ).fetchall():
                assert time.monotonic() < deadline, "the watch did not connect within a minute"
                time.sleep(0.1)
        assert not thread.is_alive()


class _Looks(threading.Event):
    """A stop that sets itself at the watch's `count`th wait: the watch runs here, look after look, with no
    clock in the test."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.left = count

    def wait(self, timeout: float | None = None) -> bool:
        self.left -= 1
        if self.left <= 0:
            self.set()
        return self.is_set()


def test_a_database_that_cannot_be_reached_is_logged_once_not_at_every_look(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    nowhere = f"host={tmp_path} port=5432 dbname=pokna"  # no server's socket in an empty directory
    with caplog.at_level(logging.WARNING, "pokna.db"):
        first_statistics.watch(nowhere, _Looks(3), tick=0)
    said = [record.getMessage() for record in caplog.records if record.name == "pokna.db"]
    assert len(said) == 1, said
    assert said[0].startswith("first statistics: "), said


def _journal_entries_read(connection: psycopg.Connection[Any]) -> int:
    """Index entries read from the journal's indexes, as the activity counters hold them."""
    found = connection.execute(
        "SELECT sum(idx_tup_read) FROM pg_stat_user_indexes WHERE relname = 'journal_transaction'"
    ).fetchone()
    assert found is not None
    return int(found[0])


POSTED = 30  # deposits, of two legs each, on the first connection once the journal has filled
ENTRIES_PER_LEG = 3  # a leg's look-up of its transaction, and its share of the chain link's: 1.5 by key


def test_the_posting_trigger_reads_its_transaction_by_key_after_the_journal_filled_under_its_connection(
    database_url: str, connection: psycopg.Connection[Any]
) -> None:
    """The trigger's own plan (PL/pgSQL keeps it for the connection), not a copy of its statement."""
    conninfo = conninfo_of(database_url)
    _without_autovacuum(connection, "journal_transaction")
    tenant_id, accounts = _funded_wallet(database_url)
    with psycopg.connect(conninfo, autocommit=True) as first:
        for _ in range(8):  # past PL/pgSQL's five custom plans, while the journal is nearly empty
            _deposit(first, tenant_id, accounts, 1)
        _deposit(conninfo, tenant_id, accounts, GROWN)
        with psycopg.connect(conninfo, autocommit=True) as watcher:
            first_statistics.analyze_filled(watcher, set())
        before = _journal_entries_read(connection)
        for _ in range(POSTED):
            _deposit(first, tenant_id, accounts, 1)
        read = _journal_entries_read(connection) - before
    # By key: a leg's look-up of its transaction and the chain link's of its predecessor, an entry each (90
    # in all). Without statistics the trigger walked the tenant's journal: 91,440, about GROWN a leg.
    assert read <= POSTED * 2 * ENTRIES_PER_LEG, f"{read} journal index entries read for {POSTED * 2} legs"
