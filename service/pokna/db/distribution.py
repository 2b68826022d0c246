"""How each table would be placed on a Citus cluster: the one declared map (docs/scaling.md).

Citus distributes a table by one column and keeps every tenant's rows of every distributed table on one
worker when the tables are colocated; a reference table is copied whole to every node. Pokna distributes
by `tenant_id`. A table is:

- `DISTRIBUTED`: tenant-owned; every primary key, unique constraint and foreign key to another
  distributed table includes `tenant_id`, and every statement that reads or locks it names the tenant;
- `REFERENCE`: read before the tenant is known (an API key by its hash) or by every tenant; it may point
  at other reference tables only, never at a distributed one; every write to it goes to every node.
  Alembic's version is one too: every node, a worker the API connects to included (docs/scaling.md,
  "Serving through the workers"), reads the schema's revision from its own copy;
- `BY_OWN_KEY`: read before the tenant is known and written often (a public link, once per game), so
  distributed by its own key (`OWN_KEYS`) in a colocation group of its own: a link is written to one
  shard, and read from one by its token; it may point at reference tables only.

`tests/db/test_distribution_ready.py` holds the live catalog of a migrated database to this map. On a
database with the Citus extension, `pokna db upgrade` (and `pokna serve`'s migration) places what the map
says once the schema is at its head (`distribute`): idempotently, so a later migration's new table is
placed by the upgrade that creates it. The tests run it on a real coordinator and two workers
(tests/citus/).
"""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import Connection, text

DISTRIBUTION_COLUMN = "tenant_id"
# Every distributed table is colocated with this one; `ledger_post()` and `game_write()` are delegated by it.
COLOCATE_WITH = "journal_transaction"


class Placement(StrEnum):
    DISTRIBUTED = "distributed"
    REFERENCE = "reference"
    BY_OWN_KEY = "by_own_key"


PLACEMENT: dict[str, Placement] = {
    "tenant": Placement.REFERENCE,
    "api_key": Placement.REFERENCE,
    "game_link": Placement.BY_OWN_KEY,
    "journal_transaction": Placement.DISTRIBUTED,
    "account": Placement.DISTRIBUTED,
    "posting": Placement.DISTRIBUTED,
    "ledger_head": Placement.DISTRIBUTED,
    "ledger_checkpoint": Placement.DISTRIBUTED,
    "game_table": Placement.DISTRIBUTED,
    "game": Placement.DISTRIBUTED,
    "game_seat": Placement.DISTRIBUTED,
    "game_event": Placement.DISTRIBUTED,
    "game_roll": Placement.DISTRIBUTED,
    "game_log": Placement.DISTRIBUTED,
    "game_log_leaf": Placement.DISTRIBUTED,
    "game_log_node": Placement.DISTRIBUTED,
    "game_log_checkpoint": Placement.DISTRIBUTED,
    "idempotency_record": Placement.DISTRIBUTED,
    "webhook_event": Placement.DISTRIBUTED,
    "webhook_endpoint": Placement.DISTRIBUTED,
    "webhook_delivery": Placement.DISTRIBUTED,
    "alembic_version": Placement.REFERENCE,
}

# The column each BY_OWN_KEY table is distributed by.
OWN_KEYS: dict[str, str] = {"game_link": "public_token"}

# The functions that run where their tenant's rows are: (signature, the argument that names the tenant).
DELEGATED_FUNCTIONS = (
    ("ledger_post(text, jsonb)", "p_tenant_id"),
    ("game_write(text, json)", "p_tenant_id"),
    ("ledger_move(text, json)", "p_tenant_id"),
    ("beacon_roll_write(text, text, text, jsonb)", "p_tenant_id"),
    ("ledger_take_chain(text, smallint)", "p_tenant_id"),
)


# Settings of functions that run on the workers, given on a Citus database only (docs/scaling.md, "Plans on
# the workers"). Every delegated function, and the posting trigger, plans its statements at each call. Under
# a generic plan Citus 14 plans each statement's shard query again at every execution and appends the plan
# to a list the generic plan keeps for the connection's life (local_plan_cache.c looks for a cached plan in
# the generic plan's task list, which deferred pruning leaves empty), while it runs the first plan of that
# list: a worker backend grew by 0.24-0.29 MB a deposit (96 MB after 400), and the plan it ran was made
# when the shard was small (the posting trigger's one walked the tenant's whole journal on every posting).
# With a plan per call the cache is never used: the shard query is planned once per execution either way,
# now with the shard as it is. On one PostgreSQL ANALYZE replans the generic plan, and a plan per call would
# only cost (about 0.1 ms a planning). A setting on a function holds for what it calls and the triggers its
# statements fire; the trigger keeps its own for a posting written outside them. The Citus bug is reproduced
# for upstream, with a fix, in deploy/citus/repro-local-plan-cache/; its test
# (tests/citus/test_citus_plan_cache_reproducer.py) fails once a Citus release fixes it.
PLANNED_EACH_CALL = ("plan_cache_mode", "force_custom_plan")
WORKER_FUNCTION_SETTINGS = tuple(
    (signature, *PLANNED_EACH_CALL)
    for signature in (*(signature for signature, _ in DELEGATED_FUNCTIONS), "ledger_posting_apply()")
)


def tables(placement: Placement) -> list[str]:
    return [table for table, placed in PLACEMENT.items() if placed is placement]


# Settings for the transaction that places tables (and for every migration on a Citus database):
# - the ledger's triggers touch only rows of their own tenant, so of their own shard ("unsafe" is Citus's
#   word for a trigger it cannot prove that of);
# - DDL and placement in one transaction block run shard by shard over one connection per worker;
# - a reference table that local tables point at stays a reference table, the local tables stay local
#   until they are distributed in turn (by default Citus would turn every table with a foreign key to
#   `tenant` into a "Citus local table", which a distributed table may then not reference).
CITUS_SETTINGS = (
    "SET LOCAL citus.enable_unsafe_triggers TO on",
    "SET LOCAL citus.multi_shard_modify_mode TO 'sequential'",
    "SET LOCAL citus.enable_local_reference_table_foreign_keys TO off",
)


def has_citus(connection: Connection) -> bool:
    found = connection.scalar(text("SELECT count(*) FROM pg_extension WHERE extname = 'citus'"))
    return bool(found)


def is_worker(connection: Connection) -> bool:
    """A Citus worker's database (the coordinator's node group is 0, and so is a Citus database with no
    node registered yet)."""
    return bool(connection.scalar(text("SELECT groupid <> 0 FROM pg_dist_local_group")))


def placement_statements(placed: set[str], delegated: set[str]) -> list[str]:
    """What places the tables and delegates the functions not yet placed or delegated, in an order Citus
    accepts: reference tables first (a distributed table's foreign keys to `tenant` need it), then
    `journal_transaction`, then every other tenant-owned table colocated with it (foreign keys between
    them pair `tenant_id`, and name tables distributed before them), then the tables distributed by their
    own key, then the functions."""
    statements = [
        f"SELECT create_reference_table('{table}')"
        for table in tables(Placement.REFERENCE)
        if table not in placed
    ]
    distributed = tables(Placement.DISTRIBUTED)
    ordered = [COLOCATE_WITH, *(table for table in distributed if table != COLOCATE_WITH)]
    for table in ordered:
        if table in placed:
            continue
        colocation = "" if table == COLOCATE_WITH else f", colocate_with => '{COLOCATE_WITH}'"
        statements.append(f"SELECT create_distributed_table('{table}', '{DISTRIBUTION_COLUMN}'{colocation})")
    statements += [
        f"SELECT create_distributed_table('{table}', '{OWN_KEYS[table]}', colocate_with => 'none')"
        for table in tables(Placement.BY_OWN_KEY)
        if table not in placed
    ]
    statements += [
        f"SELECT create_distributed_function('{signature}', '{argument}', "
        f"colocate_with => '{COLOCATE_WITH}', force_delegation => true)"
        for signature, argument in DELEGATED_FUNCTIONS
        if signature not in delegated
    ]
    return statements


def _placed(connection: Connection) -> set[str]:
    return set(connection.scalars(text("SELECT logicalrelid::regclass::text FROM pg_dist_partition")))


def _delegated(connection: Connection) -> set[str]:
    """Which functions of DELEGATED_FUNCTIONS are delegated, by the signature it spells. Compared by the
    function's oid: a signature read back from the catalog names OUT parameters too (`ledger_post` has
    nine), and one that never matched was delegated again at every upgrade, which then failed while any
    worker was down."""
    rows = connection.execute(
        text(
            "SELECT wanted.signature FROM unnest(CAST(:signatures AS text[])) AS wanted(signature) "
            "JOIN pg_dist_object d ON d.classid = 'pg_proc'::regclass "
            "AND d.objid = to_regprocedure(wanted.signature)::oid "
            "WHERE d.distribution_argument_index IS NOT NULL"
        ),
        {"signatures": [signature for signature, _ in DELEGATED_FUNCTIONS]},
    ).scalars()
    return set(rows)


def setting_statements(connection: Connection) -> list[str]:
    """What gives each function of WORKER_FUNCTION_SETTINGS the setting it does not have yet (Citus passes
    ALTER FUNCTION on to the workers)."""
    statements = []
    for signature, name, value in WORKER_FUNCTION_SETTINGS:
        config = connection.scalar(
            text("SELECT proconfig FROM pg_proc WHERE oid = CAST(:function AS regprocedure)"),
            {"function": signature},
        )
        if f"{name}={value}" not in (config or []):
            statements.append(f"ALTER FUNCTION {signature} SET {name} = {value}")
    return statements


def distribute(connection: Connection) -> list[str]:
    """On a Citus coordinator, place every table of the map not yet placed, delegate every function not
    yet delegated and give the workers' functions their settings, in the caller's transaction; idempotent
    (a second run does nothing). What it ran."""
    for setting in CITUS_SETTINGS:
        connection.execute(text(setting))
    statements = placement_statements(_placed(connection), _delegated(connection))
    for statement in statements:
        connection.execute(text(statement))
    # Once the functions are on the workers (a trigger's goes with its table), so the setting follows them.
    settings = setting_statements(connection)
    for statement in settings:
        connection.execute(text(statement))
    return statements + settings
