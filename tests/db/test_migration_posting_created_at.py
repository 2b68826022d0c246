"""Migration 0025 gives the postings already written their transaction's moment, keeps them append-only, and
reverses cleanly: a database at 0024 with two tenants' postings, upgraded, downgraded and upgraded again."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import DBAPIError

from pokna.db import migrate
from pokna.db.engine import make_engine
from support.ledger_history import new_tenant_row, open_books, post_deposits

BEFORE = "0024_game_write_checks"
MATCHING = (
    "SELECT count(*), count(*) FILTER (WHERE p.created_at = t.created_at) FROM posting AS p "
    "JOIN journal_transaction AS t ON t.tenant_id = p.tenant_id AND t.id = p.transaction_id"
)


def _matching(engine: Engine) -> tuple[int, int]:
    with engine.connect() as connection:
        total, matching = connection.execute(text(MATCHING)).one()
    return int(total), int(matching)


def _posting_columns(engine: Engine) -> set[str]:
    with engine.connect() as connection:
        return {column["name"] for column in inspect(connection).get_columns("posting")}


def _posting_indexes(engine: Engine) -> set[str]:
    with engine.connect() as connection:
        return {str(index["name"]) for index in inspect(connection).get_indexes("posting")}


def test_0025_backfills_each_posting_with_its_transactions_moment(empty_database_url: str) -> None:
    migrate.upgrade(empty_database_url, BEFORE)
    engine = make_engine(empty_database_url)
    try:
        tenants = [
            open_books(engine, new_tenant_row(engine, name)) for name in ("Tosche Station", "Mos Eisley")
        ]
        for seed, books in enumerate(tenants):
            post_deposits(engine, books, 300, seed=seed, batch=100)
        migrate.upgrade(empty_database_url)
        engine.dispose()
        assert _matching(engine) == (1200, 1200)
        assert "ix_posting_account_time" in _posting_indexes(engine)
        assert "ix_posting_account_id" not in _posting_indexes(engine)
        refusal = "posting is append-only; UPDATE refused"
        with pytest.raises(DBAPIError, match=refusal) as refused, engine.begin() as connection:
            connection.execute(text("UPDATE posting SET amount = amount"))
        assert getattr(refused.value.orig, "sqlstate", None) == "23000"
        post_deposits(engine, tenants[0], 10, seed=9)
        assert _matching(engine) == (1220, 1220)

        migrate.downgrade(empty_database_url, BEFORE)
        engine.dispose()
        assert "created_at" not in _posting_columns(engine)
        assert "ix_posting_account_id" in _posting_indexes(engine)
        assert "ix_posting_account_time" not in _posting_indexes(engine)
        post_deposits(engine, tenants[1], 10, seed=10)  # 0024's ledger_post, on 0024's table
        migrate.upgrade(empty_database_url)
        engine.dispose()
        assert _matching(engine) == (1240, 1240)
    finally:
        engine.dispose()


def test_0025_gives_up_behind_a_long_reader_and_runs_again_after_it(empty_database_url: str) -> None:
    """docs/operations.md: the migration waits at most 10 s for the posting table's lock, fails with nothing
    changed, and `pokna db upgrade` run again once the reader is done migrates."""
    migrate.upgrade(empty_database_url, BEFORE)
    engine = make_engine(empty_database_url)
    try:
        books = open_books(engine, new_tenant_row(engine, "Anchorhead"))
        post_deposits(engine, books, 20, seed=1)
        with engine.connect() as reader:  # an export's long read of the postings, still open
            reader.execute(text("SELECT count(*) FROM posting")).one()
            with pytest.raises(DBAPIError) as gave_up:
                migrate.upgrade(empty_database_url)
            assert getattr(gave_up.value.orig, "sqlstate", None) == "55P03"  # lock_not_available
            assert migrate.current_revision(engine) == BEFORE
            assert "created_at" not in _posting_columns(engine)
            reader.rollback()
        migrate.upgrade(empty_database_url)
        assert migrate.current_revision(engine) == migrate.head_revision()
        assert _matching(engine) == (40, 40)
    finally:
        engine.dispose()
