"""The longest waits the settings accept are ones PostgreSQL accepts: its timeouts are whole milliseconds
in a 32-bit integer, and a connection asking for more is refused at its start, so an API configured
beyond them would answer /readyz while none of its requests' connections could ever open."""

from __future__ import annotations

import psycopg
from annotated_types import Le
from psycopg.conninfo import make_conninfo

from pokna.db.backend import conninfo_of
from pokna.db.engine import Waits
from pokna.settings import Settings


def _longest(field: str) -> int:
    rules = Settings.model_fields[field].metadata
    bounds = [rule.le for rule in rules if isinstance(rule, Le) and isinstance(rule.le, int)]
    assert bounds, f"POKNA_{field.upper()} has no upper bound"
    return bounds[0]


def test_the_longest_waits_the_settings_accept_open_a_connection(empty_database_url: str) -> None:
    waits = Waits(
        connect=5,
        statement=_longest("database_statement_timeout_seconds"),
        idle_in_transaction=_longest("database_idle_in_transaction_timeout_seconds"),
    )
    with psycopg.connect(
        make_conninfo(conninfo_of(empty_database_url), **waits.libpq_parameters())
    ) as connection:
        shown = connection.execute(
            "SELECT current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout')"
        ).fetchone()
    assert shown == (f"{waits.statement}s", f"{waits.idle_in_transaction}s")
