"""What the database servers did in one benchmark phase, in counts that the machine's noise does not move
(issue 45: why the Citus workers' CPU per request grows phase after phase).

Each node (plain PostgreSQL, or a Citus worker) is read before and after a phase:

- pg_stat_statements (preloaded with `track = all`, so the statements inside `ledger_post()`, `game_write()`
  and their triggers count too): per statement, calls, rows and shared buffers hit or read. Buffers per
  call grow when a statement walks more of a table or an index than it did: dead row versions, a HOT chain,
  an index that bloats.
- pg_stat_user_tables and pg_stat_user_indexes, shards summed under their table's name (`account_102008`
  is `account`; a Citus worker shows its shards only with `citus.override_table_visibility = off`): live
  and dead rows, HOT updates, (auto)vacuum and (auto)analyze counts, and the heap's and indexes' sizes.

`statements_delta` and `tables_at` turn two snapshots into the phase's figures."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import create_engine, text

# Preloaded on every server of a run that reads statements (`--statements`).
PRELOAD = (
    "-c pg_stat_statements.track=all -c pg_stat_statements.max=20000 -c pg_stat_statements.track_utility=off"
)

SHARD_SUFFIX = re.compile(r"_\d+$")

STATEMENTS = text(
    "SELECT queryid::text, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query, query ~ 'pg_stat' AS own, "
    "calls, rows, "
    "shared_blks_hit, shared_blks_read, total_exec_time "
    "FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
)
TABLES = text(
    "SELECT relname, n_live_tup, n_dead_tup, n_tup_ins, n_tup_upd, n_tup_hot_upd, vacuum_count, "
    "autovacuum_count, analyze_count, autoanalyze_count, pg_relation_size(relid) AS heap_bytes, "
    "pg_indexes_size(relid) AS index_bytes FROM pg_stat_user_tables WHERE schemaname = 'public'"
)
DATABASE = text(
    "SELECT blks_hit + blks_read AS buffers, xact_commit, tup_returned, tup_fetched "
    "FROM pg_stat_database WHERE datname = current_database()"
)
SUMMED = (
    "n_live_tup",
    "n_dead_tup",
    "n_tup_ins",
    "n_tup_upd",
    "n_tup_hot_upd",
    "vacuum_count",
    "autovacuum_count",
    "analyze_count",
    "autoanalyze_count",
    "heap_bytes",
    "index_bytes",
)


@dataclass(frozen=True)
class Node:
    name: str  # "postgres", "worker1", ...
    url: str
    citus: bool


def prepare(node: Node) -> None:
    """The extension in the node's database (on a Citus node without propagating it: each node has its own)."""
    engine = create_engine(node.url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            if node.citus:
                connection.execute(text("SET citus.enable_ddl_propagation = off"))
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"))
    finally:
        engine.dispose()


def snapshot(node: Node) -> dict[str, Any]:
    engine = create_engine(node.url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            if node.citus:
                connection.execute(text("SET citus.override_table_visibility = off"))
            # Counters a backend has not flushed yet (at most a second old) would blur the phase's edges.
            connection.execute(text("SELECT pg_stat_force_next_flush()"))
            statements = {row.queryid: row._asdict() for row in connection.execute(STATEMENTS)}
            tables: dict[str, dict[str, int]] = {}
            for row in connection.execute(TABLES):
                summed = tables.setdefault(SHARD_SUFFIX.sub("", row.relname), dict.fromkeys(SUMMED, 0))
                summed["shards"] = summed.get("shards", 0) + 1
                for column in SUMMED:
                    summed[column] += getattr(row, column) or 0
            database = connection.execute(DATABASE).one()._asdict()
        return {"statements": statements, "tables": tables, "database": database}
    finally:
        engine.dispose()


def statements_delta(before: dict[str, Any], after: dict[str, Any], top: int = 30) -> list[dict[str, Any]]:
    """The phase's statements on one node, the most buffers in all first: calls, rows and shared buffers
    (hit + read) per call, and execution ms per call."""
    rows = []
    for queryid, now in after["statements"].items():
        was = before["statements"].get(queryid, {})
        calls = now["calls"] - was.get("calls", 0)
        if calls <= 0:
            continue
        buffers = (now["shared_blks_hit"] + now["shared_blks_read"]) - (
            was.get("shared_blks_hit", 0) + was.get("shared_blks_read", 0)
        )
        rows.append(
            {
                "query": now["query"],
                "calls": calls,
                "rows_per_call": round((now["rows"] - was.get("rows", 0)) / calls, 2),
                "buffers_per_call": round(buffers / calls, 2),
                "buffers": buffers,
                "exec_ms_per_call": round(
                    (now["total_exec_time"] - was.get("total_exec_time", 0.0)) / calls, 4
                ),
            }
        )
    rows.sort(key=lambda row: -row["buffers"])
    return rows[:top]


def database_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    """The whole database's buffers, commits and rows read in the phase (nested statements not counted
    twice, as they are in pg_stat_statements with `track = all`; autovacuum's included), less what reading
    these statistics cost (about 18,000 buffers a snapshot on a Citus worker: its 300-odd shards' sizes)."""
    delta = {name: after["database"][name] - before["database"][name] for name in after["database"]}
    own = sum(
        (now["shared_blks_hit"] + now["shared_blks_read"])
        - (was.get("shared_blks_hit", 0) + was.get("shared_blks_read", 0))
        for queryid, now in after["statements"].items()
        if now["own"]
        for was in [before["statements"].get(queryid, {})]
    )
    delta["buffers"] -= own
    return delta


def tables_at(after: dict[str, Any], names: tuple[str, ...]) -> dict[str, dict[str, int]]:
    return {name: after["tables"][name] for name in names if name in after["tables"]}
