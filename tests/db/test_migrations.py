"""Migrations are the only source of the schema: they agree with the models and reverse cleanly."""

from __future__ import annotations

import json

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text

import pokna.db.models  # noqa: F401
from pokna.db import migrate
from pokna.db.base import Base
from pokna.db.engine import make_engine
from pokna.db.models.tenant import Tenant
from pokna.db.types import new_id, utc_now
from pokna.ledger.drafts import draft_of, unchained
from pokna.ledger.model import AccountTransfer
from pokna.ledger.posting_batch import batch_document
from support.driver import funding_account, open_account
from support.sessions import make_sessionmaker, unit_of_work


def test_models_and_migrations_agree(database_url: str) -> None:
    """The in-test equivalent of `alembic check`: autogenerate finds nothing to do at head."""
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            differences = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    assert differences == []


def test_upgrade_downgrade_upgrade(empty_database_url: str) -> None:
    migrate.upgrade(empty_database_url)
    engine = make_engine(empty_database_url)
    try:
        assert migrate.current_revision(engine) == migrate.head_revision()
        tables_at_head = set(inspect(engine).get_table_names())
        assert {"tenant", "api_key", "alembic_version"} <= tables_at_head
        migrate.downgrade(empty_database_url, "base")
        engine.dispose()
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        assert migrate.current_revision(engine) is None
        migrate.upgrade(empty_database_url)
        engine.dispose()
        assert set(inspect(engine).get_table_names()) == tables_at_head
    finally:
        engine.dispose()


def test_ledger_post_kept_the_array_signature_beside_the_jsonb_one_until_postings_had_a_tenant(
    empty_database_url: str,
) -> None:
    """0005 adds ledger_post(tenant, jsonb) beside 0004's 22-array function, which processes still running
    the previous code call during a rolling deployment; the downgrade drops only the new one. 0011 drops
    the array one (it writes postings without their tenant); its downgrade brings it back."""

    def ledger_post_inputs() -> list[str]:
        engine = make_engine(empty_database_url)
        try:
            with engine.connect() as connection:
                return sorted(
                    connection.scalars(
                        text("SELECT oidvectortypes(proargtypes) FROM pg_proc WHERE proname = 'ledger_post'")
                    )
                )
        finally:
            engine.dispose()

    migrate.upgrade(empty_database_url)
    assert ledger_post_inputs() == ["text, jsonb"]
    migrate.downgrade(empty_database_url, "0009_game_write")
    both = ledger_post_inputs()
    assert len(both) == 2
    arrays, batch = sorted(both, key=len, reverse=True)
    assert batch == "text, jsonb"
    assert arrays.startswith("text, text[], text[], bigint[], text[]")
    assert arrays.count("[]") == 21
    migrate.downgrade(empty_database_url, "0004_ledger_post")
    assert ledger_post_inputs() == [arrays]
    migrate.upgrade(empty_database_url)
    assert ledger_post_inputs() == ["text, jsonb"]


def test_0017_downgrade_brings_back_the_ledger_level_key_and_keeps_the_books(empty_database_url: str) -> None:
    """0017 drops the journal's idempotency columns and reshapes ledger_post()'s document; its downgrade
    restores 0016's functions and the (empty) columns, and what was posted stays posted, across a round trip."""
    migrate.upgrade(empty_database_url)
    engine = make_engine(empty_database_url)
    sessions = make_sessionmaker(engine)
    tenant_id = new_id("ten")
    with unit_of_work(sessions) as session:
        session.add(Tenant(id=tenant_id, name="Tosche Station", created_at=utc_now()))
    with unit_of_work(sessions) as session:
        wallet = open_account(session, tenant_id=tenant_id, kind="player_wallet").id
        funding = funding_account(session, tenant_id).id

    def deposit() -> str:
        draft = draft_of("deposit", AccountTransfer("deposit", funding, wallet, 5).postings(), None, None)
        written = unchained(tenant_id, draft, {wallet: "CREDIT", funding: "CREDIT"}, 0)
        document = batch_document(sorted((wallet, funding)), {}, [written], 0)
        with engine.begin() as connection:
            return str(
                connection.scalar(
                    text("SELECT status FROM ledger_post(:tenant, CAST(:batch AS jsonb))"),
                    {"tenant": tenant_id, "batch": json.dumps(document.as_json())},
                )
            )

    def journal() -> list[tuple[int, str]]:
        with engine.connect() as connection:
            return [
                (row.seq, row.hash)
                for row in connection.execute(text("SELECT seq, hash FROM journal_transaction"))
            ]

    def shape() -> tuple[set[str], bool, bool]:
        with engine.connect() as connection:
            columns = {column["name"] for column in inspect(connection).get_columns("journal_transaction")}
            keyed = "t_idempotency_key" in str(
                connection.scalar(text("SELECT prosrc FROM pg_proc WHERE proname = 'ledger_post'"))
            )
            fill = bool(
                connection.scalar(text("SELECT count(*) FROM pg_proc WHERE proname = 'ledger_move_fill'"))
            )
        return columns & {"idempotency_key", "request_hash"}, keyed, fill

    try:
        assert deposit() == "posted"
        posted = journal()
        assert shape() == (set(), False, False)
        migrate.downgrade(empty_database_url, "0016_ledger_post_row_inserts")
        engine.dispose()
        assert shape() == ({"idempotency_key", "request_hash"}, True, True)
        assert journal() == posted
        migrate.upgrade(empty_database_url)
        engine.dispose()
        assert shape() == (set(), False, False)
        assert deposit() == "posted"
        assert [seq for seq, _ in journal()] == [1, 2]
    finally:
        engine.dispose()
