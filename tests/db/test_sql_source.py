"""The SQL in force is service/pokna/sql/: every function of the migrated schema and every trigger is its
source file's, character for character in the body (docs/architecture.md, "The SQL in force"; how the
two are compared: tests/support/sql_sources.py). The other tests here show the comparison failing on each
kind of drift, on a database or a source changed in a transaction that is rolled back.
"""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from support.sql_sources import drift, sources

# A change that keeps the function valid and its name and arguments: the append-only guard let through.
REFUSE_NOTHING = """
CREATE OR REPLACE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RETURN NULL;
END
$$"""


@pytest.mark.citus
def test_every_function_and_trigger_in_the_database_is_its_source(engine: Engine) -> None:
    with engine.connect() as connection:
        findings = drift(connection, sources())
    assert findings == [], "\n\n".join(findings)


def test_the_sources_are_the_eleven_functions_in_force() -> None:
    """A function added or dropped is a file added or removed here too (the list says which were in force)."""
    assert sorted(sources()) == [
        "beacon_roll_write",
        "game_write",
        "ledger_account_guard",
        "ledger_chain_link",
        "ledger_check_balanced",
        "ledger_move",
        "ledger_post",
        "ledger_posting_apply",
        "ledger_refuse_change",
        "ledger_refuse_held_debit",
        "ledger_take_chain",
    ]


def test_a_body_changed_in_the_database_is_reported(engine: Engine) -> None:
    with engine.connect() as connection:
        connection.execute(text(REFUSE_NOTHING))
        findings = drift(connection, sources())
    assert len(findings) == 1, findings
    assert findings[0].startswith(
        "ledger_refuse_change() differs from service/pokna/sql/ledger_refuse_change.sql:"
    )
    assert "\n-    RETURN NULL;" in findings[0]
    assert "\n+    RAISE EXCEPTION 'ledger: % is append-only;" in findings[0]


def test_a_changed_source_is_reported(engine: Engine) -> None:
    """A source edited without a migration: one character of a body, one operator of a trigger's WHEN."""
    changed = sources()
    changed["ledger_post"] = changed["ledger_post"].replace(
        "v_chain smallint := coalesce((p_batch->>'chain')::smallint, 0);",
        "v_chain smallint := coalesce((p_batch->>'chain')::smallint, 1);",
    )
    changed["ledger_refuse_held_debit"] = changed["ledger_refuse_held_debit"].replace(
        "NEW.balance < OLD.balance", "NEW.balance <= OLD.balance"
    )
    with engine.connect() as connection:
        findings = drift(connection, changed)
    assert [finding.splitlines()[0] for finding in findings] == [
        "ledger_post(p_tenant_id text, p_batch jsonb, OUT status text, OUT refused_account_id text, "
        "OUT refused_balance bigint, OUT refused_change bigint, OUT first_seq bigint, OUT first_prev_hash text, "
        "OUT hashes text[], OUT held_account_ids text[], OUT held_balances bigint[]) "
        "differs from service/pokna/sql/ledger_post.sql:",
        "trigger account.trg_account_roll_hold differs from service/pokna/sql/ledger_refuse_held_debit.sql:",
    ]
    assert "\n+    v_chain smallint := coalesce((p_batch->>'chain')::smallint, 1);" in findings[0]


def test_a_function_or_trigger_without_a_source_is_reported(engine: Engine) -> None:
    without_move = {name: source for name, source in sources().items() if name != "ledger_move"}
    with engine.connect() as connection:
        connection.execute(
            text("CREATE FUNCTION pokna_stray() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN END $$")
        )
        connection.execute(
            text(
                "CREATE TRIGGER trg_game_stray BEFORE UPDATE ON game FOR EACH ROW EXECUTE FUNCTION pokna_stray()"
            )
        )
        findings = drift(connection, without_move)
    assert findings == [
        "ledger_move(p_tenant_id text, p_move json) is in the database and in no source file (service/pokna/sql/)",
        "pokna_stray() is in the database and in no source file (service/pokna/sql/)",
        "trigger game.trg_game_stray is in the database and in no source file (service/pokna/sql/)",
    ]


def test_a_source_the_database_lacks_is_reported(engine: Engine) -> None:
    """A source the database lacks (a migration not written, or a function dropped and its file kept), and
    a file named after another function than the one it creates."""
    extra = sources()
    extra["ledger_forget"] = "CREATE OR REPLACE FUNCTION ledger_forget() RETURNS void LANGUAGE sql AS $$ $$;"
    extra["ledger_deposit"] = extra.pop("ledger_move")
    with engine.connect() as connection:
        findings = drift(connection, extra)
    assert findings == [
        "service/pokna/sql/ledger_deposit.sql creates ['ledger_move(p_tenant_id text, p_move json)']: a source "
        "file creates one function, named as the file is",
        "service/pokna/sql/ledger_forget.sql: ledger_forget() is not in the database",
    ]
