"""Migrations are the only source of the schema: they agree with the models and reverse cleanly."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text

import pokna.db.models  # noqa: F401
from pokna.db import migrate
from pokna.db.base import Base
from pokna.db.engine import make_engine


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
        assert migrate.is_at_head(engine)
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
