"""Statistics for a table as soon as it holds rows, not when autovacuum first comes round (up to a minute on).

Why: a statement is planned on a connection and its plan kept (psycopg prepares a statement on its fifth
execution, PL/pgSQL keeps the plans of a function's and a trigger's statements, and PostgreSQL then keeps a
generic plan) until an ANALYZE of a table it reads invalidates it. A table that was never analyzed has no
statistics, and the planner falls back on fixed guesses: a lookup by (tenant, id) then costs the same
through the primary key (id, tenant_id) as through any index that starts with tenant_id, and below a
thousand rows or so the tenant's index wins. Planned on a fresh database's nearly empty tables, the posting
trigger's look-up of its transaction read the tenant's whole journal through `(tenant_id, chain, seq)`, and
an account's read every account of the tenant, on every call, as the tables grew (bench/README.md, "The
soak's decline"). With statistics, even a few dozen rows' worth, the planner sees that a tenant's rows are
many and an id's one, and takes the key; and the ANALYZE replans what was planned before. Autovacuum
analyzes a table once `autovacuum_analyze_threshold` (50) rows changed, but only when it visits the
database, every `autovacuum_naptime` (a minute by default): a fresh deployment served its first minute on
the guesses. So `pokna serve` watches, from one thread of its own (`watching`), for a table of its schema
that was never analyzed and holds `ROWS_WORTH_STATISTICS` rows, and ANALYZEs it once; autovacuum keeps the
statistics from then on. A table is tried once per process (an ANALYZE the service's role may not run is
PostgreSQL's warning, not an error, logged as such). A table may fill at any time (a tenant's first game a
week on), so the thread looks once a second, on a connection of its own, until no table is left that was
never analyzed: in practice for the server's life (`alembic_version`'s one row is never worth autovacuum's
ANALYZE either), one read of `pg_stat_user_tables` a second (about a millisecond of the database's time).

Not on Citus: the coordinator's distributed tables are empty shells, and the workers' functions plan each
call on the shard as it is (pokna.db.distribution.WORKER_FUNCTION_SETTINGS).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

log = logging.getLogger("pokna.db")

ROWS_WORTH_STATISTICS = 50
"""autovacuum_analyze_threshold's default: the rows after which autovacuum would analyze a new table."""

TICK_SECONDS = 1.0
STOP_SECONDS = 5.0

# The activity counters (analyze_count, n_live_tup) are what autovacuum reads too; a backend flushes its own
# at most a second after its transaction ends, so a table that fills is seen within a tick or two.
NEVER_ANALYZED = """
    SELECT relname, n_live_tup FROM pg_stat_user_tables
    WHERE schemaname = current_schema() AND analyze_count = 0 AND autoanalyze_count = 0
    ORDER BY relname
"""

_HAS_CITUS = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"


def analyze_filled(connection: psycopg.Connection[Any], tried: set[str]) -> bool:
    """One look (an autocommit connection): ANALYZE every table never analyzed that holds
    `ROWS_WORTH_STATISTICS` rows and is not in `tried` (to which it is added). True while some table is
    left to analyze later."""
    left = False
    for table, rows in connection.execute(NEVER_ANALYZED).fetchall():
        if table in tried:
            continue
        if rows < ROWS_WORTH_STATISTICS:
            left = True
            continue
        tried.add(table)
        if skipped := _analyze(connection, table):
            log.warning("first statistics: %s not analyzed (%s)", table, skipped)
        else:
            log.info("first statistics: analyzed %s (%d rows)", table, rows)
    return left


def _analyze(connection: psycopg.Connection[Any], table: str) -> str:
    """ANALYZE the table; what PostgreSQL warned, if anything. A table the role may not analyze is skipped
    with a WARNING, not an error, and psycopg drops a notice nobody handles: without this, the log said
    "analyzed" of a table left as it was."""
    warned: list[str] = []

    def heard(notice: psycopg.errors.Diagnostic) -> None:
        if notice.severity_nonlocalized == "WARNING" and notice.message_primary:
            warned.append(notice.message_primary)

    connection.add_notice_handler(heard)
    try:
        connection.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
    finally:
        connection.remove_notice_handler(heard)
    return "; ".join(warned)


def watch(conninfo: str, stop: threading.Event, tick: float = TICK_SECONDS) -> None:
    """Look every `tick` seconds until every table has been analyzed or `stop` is set. A lost connection
    is made again at the next tick, logged once an outage; nothing here may end the server."""
    tried: set[str] = set()
    failing = False
    while not stop.is_set():
        try:
            with psycopg.connect(
                conninfo, autocommit=True, application_name="pokna first statistics"
            ) as connection:
                failing = False
                if connection.execute(_HAS_CITUS).fetchone() == (True,):
                    return
                while not stop.is_set() and analyze_filled(connection, tried):
                    stop.wait(tick)
                return
        except Exception as error:  # never let the thread die: log it and look again
            if not failing:
                log.warning("first statistics: %s; looking again every %.0f s", error, tick)
            failing = True
        stop.wait(tick)


@contextmanager
def watching(conninfo: str) -> Iterator[threading.Thread]:
    """`watch` in a daemon thread for the block (the server's life), stopped when it ends, and waited for
    (up to `STOP_SECONDS`, as an ANALYZE under way is not interrupted): `pokna serve` stops an embedded
    cluster right after, which would cut a watch still connected off mid-look, logged as an outage."""
    stop = threading.Event()
    thread = threading.Thread(target=watch, args=(conninfo, stop), name="pokna-first-statistics", daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join(STOP_SECONDS)
