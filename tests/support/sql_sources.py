"""The SQL in force against its sources: every function of the schema and every trigger, as the database holds
them and as service/pokna/sql/ writes them (docs/architecture.md, "The SQL in force").

PostgreSQL reads both sides. Each source file runs in a scratch schema, beside empty copies of the schema's
tables (its triggers need their table) and of its composite types (a function's variables may be of one),
inside a savepoint that is rolled back; then what the database holds and what the file made are compared as
PostgreSQL prints them back (`pg_get_functiondef`, `pg_get_triggerdef`), with the schema's name left out. So
the comparison is exact where it matters and blind where it does not: a function's body is stored as written,
every character of it; its header (arguments, result, language, volatility, settings) and a trigger's
statement are compared as parsed, so a file may lay them out for reading. A file must create exactly one
function, named after the file, and only triggers that call it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Connection, text

import pokna
from pokna.db.distribution import WORKER_FUNCTION_SETTINGS, has_citus

SOURCES = Path(pokna.__file__).parent / "sql"
SCRATCH = "pokna_sql_source"

# Functions an extension owns (pg_depend deptype 'e': plpgsql's handler, Citus's own) are the extension's.
FUNCTIONS = """
SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
    CASE WHEN p.prokind = 'a' THEN 'an aggregate' ELSE pg_get_functiondef(p.oid) END
FROM pg_proc p
WHERE p.pronamespace = CAST(:schema AS regnamespace)
    AND NOT EXISTS (
        SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
    )
"""
TRIGGERS = """
SELECT c.relname || '.' || t.tgname, pg_get_triggerdef(t.oid)
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE c.relnamespace = CAST(:schema AS regnamespace) AND NOT t.tgisinternal
"""
TABLES = "SELECT relname FROM pg_class WHERE relnamespace = CAST(:schema AS regnamespace) AND relkind IN ('r', 'p')"
# The schema's own composite types (a function may declare a variable of one), in the order they were made.
TYPES = """
SELECT c.relname, string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod), ', '
    ORDER BY a.attnum)
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.relnamespace = CAST(:schema AS regnamespace) AND c.relkind = 'c'
GROUP BY c.oid, c.relname
ORDER BY c.oid
"""


@dataclass
class Definitions:
    """What a schema holds, as PostgreSQL prints it with the schema's name left out."""

    functions: dict[str, str] = field(default_factory=dict)  # "name(arguments)" -> pg_get_functiondef
    triggers: dict[str, str] = field(default_factory=dict)  # "table.trigger" -> pg_get_triggerdef


def sources() -> dict[str, str]:
    """Each source file's text by its name (the function's)."""
    return {path.stem: path.read_text(encoding="utf-8") for path in sorted(SOURCES.glob("*.sql"))}


def source_path(name: str) -> str:
    return f"service/pokna/sql/{name}.sql"


def drift(connection: Connection, sql_sources: dict[str, str]) -> list[str]:
    """Every difference between the connection's schema and the sources, one finding each (none: they agree).

    Runs in a savepoint of the connection's transaction, rolled back: what the caller changed in that
    transaction is seen, and the scratch schema is gone afterwards."""
    findings: list[str] = []
    with connection.begin_nested() as scratch:
        schema = str(connection.scalar(text("SELECT current_schema()")))
        live = _definitions(connection, schema)
        made = _run_sources(connection, schema, sql_sources, findings)
        scratch.rollback()
    owners = {signature: name for name, defined in made.items() for signature in defined.functions}
    trigger_owners = {key: name for name, defined in made.items() for key in defined.triggers}
    for signature in sorted(live.functions.keys() - owners.keys()):
        findings.append(f"{signature} is in the database and in no source file (service/pokna/sql/)")
    for key in sorted(live.triggers.keys() - trigger_owners.keys()):
        findings.append(f"trigger {key} is in the database and in no source file (service/pokna/sql/)")
    for name, defined in sorted(made.items()):
        for signature, definition in sorted(defined.functions.items()):
            if signature not in live.functions:
                findings.append(f"{source_path(name)}: {signature} is not in the database")
            elif live.functions[signature] != definition:
                findings.append(_differs(signature, name, live.functions[signature], definition))
        for key, definition in sorted(defined.triggers.items()):
            if key not in live.triggers:
                findings.append(f"{source_path(name)}: trigger {key} is not in the database")
            elif live.triggers[key] != definition:
                findings.append(_differs(f"trigger {key}", name, live.triggers[key], definition))
    return findings


def _run_sources(
    connection: Connection, schema: str, sql_sources: dict[str, str], findings: list[str]
) -> dict[str, Definitions]:
    """Each source run in the scratch schema, and what it made there. The caller rolls it all back."""
    citus = has_citus(connection)
    if citus:
        # A scratch schema of this transaction only: nothing of it goes to the workers.
        connection.execute(text("SET LOCAL citus.enable_ddl_propagation TO off"))
    connection.execute(text(f"CREATE SCHEMA {SCRATCH}"))
    for table in connection.scalars(text(TABLES), {"schema": schema}).all():
        connection.execute(text(f'CREATE TABLE {SCRATCH}."{table}" (LIKE "{schema}"."{table}")'))
    for name, columns in connection.execute(text(TYPES), {"schema": schema}).all():
        connection.execute(text(f'CREATE TYPE {SCRATCH}."{name}" AS ({columns})'))
    connection.execute(text("SELECT set_config('search_path', :schema, true)"), {"schema": SCRATCH})
    made: dict[str, Definitions] = {}
    before = Definitions()
    for name, source in sql_sources.items():
        try:
            # With no parameters at all, the driver runs the file as it is: several statements, and a `%`
            # in a RAISE is no placeholder.
            connection.execution_options(no_parameters=True).exec_driver_sql(source)
        except Exception as error:
            raise AssertionError(f"{source_path(name)} does not run: {error}") from error
        if citus:
            # What `pokna db upgrade` gives a function on Citus only (pokna.db.distribution).
            for signature, setting, value in WORKER_FUNCTION_SETTINGS:
                if signature.startswith(f"{name}("):
                    connection.execute(text(f"ALTER FUNCTION {signature} SET {setting} = {value}"))
        after = _definitions(connection, SCRATCH)
        made[name] = Definitions(
            {key: value for key, value in after.functions.items() if key not in before.functions},
            {key: value for key, value in after.triggers.items() if key not in before.triggers},
        )
        before = after
        named = [signature for signature in made[name].functions if signature.startswith(f"{name}(")]
        if len(made[name].functions) != 1 or not named:
            findings.append(
                f"{source_path(name)} creates {sorted(made[name].functions) or 'no function'}: "
                f"a source file creates one function, named as the file is"
            )
    return made


def _definitions(connection: Connection, schema: str) -> Definitions:
    """The schema's functions and triggers, read with the schema alone on the search path (a trigger's
    function is then printed unqualified) and its name taken out of the printed statements."""
    connection.execute(text("SELECT set_config('search_path', :schema, true)"), {"schema": schema})
    quoted = str(connection.scalar(text("SELECT quote_ident(:schema)"), {"schema": schema}))
    functions = {
        signature: definition.replace(f" FUNCTION {quoted}.", " FUNCTION ", 1)
        for signature, definition in connection.execute(text(FUNCTIONS), {"schema": schema})
    }
    triggers = {
        key: definition.replace(f" ON {quoted}.", " ON ", 1)
        for key, definition in connection.execute(text(TRIGGERS), {"schema": schema})
    }
    return Definitions(functions, triggers)


def _differs(what: str, name: str, live: str, source: str) -> str:
    diff = difflib.unified_diff(
        live.splitlines(), source.splitlines(), "the database", source_path(name), lineterm="", n=1
    )
    return f"{what} differs from {source_path(name)}:\n" + "\n".join(diff)
