"""What `alembic check` does not compare: CHECK constraint names, and triggers removed on downgrade."""

from __future__ import annotations

import pytest
from sqlalchemy import CheckConstraint, Engine, inspect, text

import pokna.db.models  # noqa: F401
from pokna.db import migrate
from pokna.db.base import Base
from pokna.db.engine import make_engine

LEDGER_TABLES = ("account", "journal_transaction", "posting", "ledger_head", "ledger_checkpoint")


@pytest.mark.parametrize("table", LEDGER_TABLES)
def test_check_constraints_carry_the_models_names(engine: Engine, table: str) -> None:
    modelled = {
        str(constraint.name)
        for constraint in Base.metadata.tables[table].constraints
        if isinstance(constraint, CheckConstraint)
    }
    migrated = {str(check["name"]) for check in inspect(engine).get_check_constraints(table)}
    assert migrated == modelled


def test_downgrading_the_ledger_removes_its_triggers_and_functions(
    empty_database_url: str,
) -> None:
    migrate.upgrade(empty_database_url)
    migrate.downgrade(empty_database_url, "0001_tenant")
    engine = make_engine(empty_database_url)
    try:
        with engine.connect() as connection:
            leftovers = list(
                connection.scalars(text("SELECT proname FROM pg_proc WHERE proname LIKE 'ledger%'")).all()
            )
            leftovers += connection.scalars(
                text("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE 'trg_%'")
            ).all()
        assert leftovers == []
        assert not set(LEDGER_TABLES) & set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    migrate.upgrade(empty_database_url, "0002_ledger")
