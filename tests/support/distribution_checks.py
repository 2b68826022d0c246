"""What Citus would refuse, read from a live PostgreSQL: the catalog against pokna.db.distribution's map,
and statements that read or lock a distributed table without naming the tenant.

The statement check is textual, and conservative where it can be. Its limits:
- it sees the statements that ran (pg_stat_statements, nested ones included: PL/pgSQL bodies and
  triggers) and completed; a statement that only runs on a path the flows do not take, or that failed,
  is not seen;
- a table is recognised after FROM, JOIN, UPDATE, INTO or DELETE FROM; a table named only inside dynamic
  SQL (EXECUTE) or a view would be missed (Pokna has neither);
- a `tenant_id` condition counts wherever it is (an OR branch, a subquery), so a statement can pass that
  Citus would still route to every shard; with two distributed tables in one statement each must have a
  `<alias>.tenant_id` condition of its own, which an equi-join on `tenant_id` gives.
Citus itself is the last word: docs/scaling.md says what was not run here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import Connection, text

from pokna.db.distribution import DISTRIBUTION_COLUMN, OWN_KEYS, PLACEMENT, Placement

_CATALOG_TABLES = text(
    "SELECT table_name FROM information_schema.tables "
    "WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name"
)
# Every primary key, unique constraint, unique index and foreign key, with its columns in key order.
_KEYS = text(
    """
SELECT c.conrelid::regclass::text AS table_name, c.conname AS name, c.contype AS kind,
    array(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.n) AS columns,
    c.confrelid::regclass::text AS referenced_table,
    array(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum ORDER BY k.n)
        AS referenced_columns
FROM pg_constraint c JOIN pg_namespace ns ON ns.oid = c.connamespace
WHERE ns.nspname = 'public' AND c.contype IN ('p', 'u', 'f')
UNION ALL
SELECT i.indrelid::regclass::text, i.indexrelid::regclass::text, 'i',
    array(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n),
    NULL, NULL
FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace ns ON ns.oid = t.relnamespace
WHERE ns.nspname = 'public' AND i.indisunique
    AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
ORDER BY 1, 2
"""
)
_TENANT_COLUMN = text(
    "SELECT table_name FROM information_schema.columns "
    "WHERE table_schema = 'public' AND column_name = :column AND is_nullable = 'NO'"
)


def catalog_findings(connection: Connection) -> list[str]:
    """Everything in the live schema that the declared placement cannot have on Citus."""
    findings: list[str] = []
    tables = list(connection.scalars(_CATALOG_TABLES))
    findings += [
        f"table {table} is not in the distribution map" for table in tables if table not in PLACEMENT
    ]
    findings += [f"the map names {table}, which does not exist" for table in PLACEMENT if table not in tables]
    with_tenant = set(connection.scalars(_TENANT_COLUMN, {"column": DISTRIBUTION_COLUMN}))
    distributed = {table for table, placed in PLACEMENT.items() if placed is Placement.DISTRIBUTED}
    findings += [
        f"distributed table {table} has no NOT NULL {DISTRIBUTION_COLUMN}"
        for table in sorted(distributed & set(tables))
        if table not in with_tenant
    ]
    for key in connection.execute(_KEYS):
        placed = PLACEMENT.get(key.table_name)
        if key.kind in ("p", "u", "i"):
            column = OWN_KEYS.get(key.table_name, DISTRIBUTION_COLUMN)
            if placed in (Placement.DISTRIBUTED, Placement.BY_OWN_KEY) and column not in key.columns:
                what = {"p": "primary key", "u": "unique constraint", "i": "unique index"}[key.kind]
                findings.append(
                    f"{what} {key.name} ({', '.join(key.columns)}) of distributed table {key.table_name} "
                    f"lacks {column}"
                )
            continue
        referenced = PLACEMENT.get(key.referenced_table)
        if placed is Placement.BY_OWN_KEY and referenced is not Placement.REFERENCE:
            findings.append(
                f"foreign key {key.name} from {key.table_name}, distributed by its own key, to "
                f"{key.referenced_table}, which is not a reference table"
            )
        if referenced is Placement.BY_OWN_KEY:
            findings.append(f"foreign key {key.name} to {key.referenced_table}, distributed by its own key")
        if placed is Placement.REFERENCE and referenced is Placement.DISTRIBUTED:
            findings.append(
                f"foreign key {key.name} from reference table {key.table_name} to distributed "
                f"{key.referenced_table}"
            )
        if placed is Placement.DISTRIBUTED and referenced is Placement.DISTRIBUTED:
            pairs = list(zip(key.columns, key.referenced_columns, strict=True))
            if (DISTRIBUTION_COLUMN, DISTRIBUTION_COLUMN) not in pairs:
                findings.append(
                    f"foreign key {key.name} {key.table_name} ({', '.join(key.columns)}) -> "
                    f"{key.referenced_table} ({', '.join(key.referenced_columns)}) lacks "
                    f"{DISTRIBUTION_COLUMN} on both sides"
                )
    return findings


_STOP_WORDS = {
    "where", "set", "join", "on", "order", "group", "limit", "for", "left", "right", "inner", "cross",
    "full", "using", "values", "select", "returning", "as", "natural", "window", "having", "union",
    "offset", "fetch", "default", "with", "and", "or", "lateral",
}  # fmt: skip
_REFERENCE = re.compile(
    r"\b(from|join|update|into|delete\s+from)\s+(?:only\s+)?\"?([a-z_][a-z0-9_]*)\"?(?:\s+(?:as\s+)?([a-z_][a-z0-9_]*))?",
    re.IGNORECASE,
)
_INSERT_COLUMNS = re.compile(r"\binsert\s+into\s+\"?([a-z_]+)\"?\s*\(([^)]*)\)", re.IGNORECASE)


@dataclass(frozen=True)
class TableUse:
    table: str
    qualifier: str
    inserted: bool


def _uses(statement: str) -> list[TableUse]:
    uses = []
    for match in _REFERENCE.finditer(statement):
        verb, table, alias = match.group(1).lower(), match.group(2).lower(), match.group(3)
        if PLACEMENT.get(table) is not Placement.DISTRIBUTED:
            continue
        if alias is None or alias.lower() in _STOP_WORDS:
            alias = table
        uses.append(TableUse(table, alias.lower(), inserted=verb == "into"))
    return uses


def _names_the_tenant(statement: str, qualifier: str | None) -> bool:
    column = rf"(?:\b{re.escape(qualifier)}\.)" if qualifier else r"(?:\b[a-z_]+\.)?"
    condition = rf"{column}\"?{DISTRIBUTION_COLUMN}\"?\s*(?:=|\bin\b)|(?:=|\bin\b)\s*\(?\s*{column}\"?{DISTRIBUTION_COLUMN}\b"
    return re.search(condition, statement, re.IGNORECASE) is not None


def statement_findings(statement: str) -> list[str]:
    """Why Citus would send `statement` to every shard, or refuse it (an empty list: it would not)."""
    flat = " ".join(statement.split())
    uses = _uses(flat)
    findings = []
    for match in _INSERT_COLUMNS.finditer(flat):
        table = match.group(1).lower()
        columns = [column.strip().strip('"').lower() for column in match.group(2).split(",")]
        if PLACEMENT.get(table) is Placement.DISTRIBUTED and DISTRIBUTION_COLUMN not in columns:
            findings.append(f"inserts into {table} without {DISTRIBUTION_COLUMN}")
    read = [use for use in uses if not use.inserted]
    several = len({use.qualifier for use in read}) > 1
    for use in read:
        if not _names_the_tenant(flat, use.qualifier if several else None):
            findings.append(f"reads or locks {use.table} without a {DISTRIBUTION_COLUMN} condition")
    return findings
