"""How each table would be placed on a Citus cluster: the one declared map (docs/scaling.md).

Citus distributes a table by one column and keeps every tenant's rows of every distributed table on one
worker when the tables are colocated; a reference table is copied whole to every node. Pokna distributes
by `tenant_id`. A table is:

- `DISTRIBUTED`: tenant-owned; every primary key, unique constraint and foreign key to another
  distributed table includes `tenant_id`, and every statement that reads or locks it names the tenant;
- `REFERENCE`: read before the tenant is known (an API key by its hash, a public link by its token) or
  by every tenant; it may point at other reference tables only, never at a distributed one;
- `LOCAL`: the coordinator's own bookkeeping (Alembic's version).

`tests/db/test_distribution_ready.py` holds the live catalog of a migrated database to this map, and
`deploy/citus/distribute.sql` is generated from it (`citus_script()`; the test checks the file is).
"""

from __future__ import annotations

from enum import StrEnum

DISTRIBUTION_COLUMN = "tenant_id"
# Every distributed table is colocated with this one; `ledger_post()` and `game_write()` are delegated by it.
COLOCATE_WITH = "journal_transaction"


class Placement(StrEnum):
    DISTRIBUTED = "distributed"
    REFERENCE = "reference"
    LOCAL = "local"


PLACEMENT: dict[str, Placement] = {
    "tenant": Placement.REFERENCE,
    "api_key": Placement.REFERENCE,
    "game_link": Placement.REFERENCE,
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
    "idempotency_record": Placement.DISTRIBUTED,
    "webhook_event": Placement.DISTRIBUTED,
    "webhook_endpoint": Placement.DISTRIBUTED,
    "webhook_delivery": Placement.DISTRIBUTED,
    "alembic_version": Placement.LOCAL,
}

# The functions that run where their tenant's rows are: (signature, the argument that names the tenant).
DELEGATED_FUNCTIONS = (
    ("ledger_post(text, jsonb)", "p_tenant_id"),
    ("game_write(text, json)", "p_tenant_id"),
    ("ledger_move(text, json)", "p_tenant_id"),
    ("beacon_roll_write(text, text, text, jsonb)", "p_tenant_id"),
)


def tables(placement: Placement) -> list[str]:
    return [table for table, placed in PLACEMENT.items() if placed is placement]


def citus_script() -> str:
    """The SQL that places every table and delegates the functions, run once on the coordinator after
    `pokna db upgrade` (reference tables first: a distributed table's foreign keys to them need them)."""
    lines = [
        "-- Generated from pokna.db.distribution.citus_script(); tests/db/test_distribution_ready.py",
        "-- fails when this file and the map disagree. Run on the coordinator, after `pokna db upgrade`,",
        "-- once, in one transaction (docs/scaling.md).",
        "BEGIN;",
        "-- The ledger's triggers touch only rows of their own tenant, so of their own shard.",
        "SET LOCAL citus.enable_unsafe_triggers TO on;",
        "SET LOCAL citus.multi_shard_modify_mode TO 'sequential';",
    ]
    lines += [f"SELECT create_reference_table('{table}');" for table in tables(Placement.REFERENCE)]
    distributed = tables(Placement.DISTRIBUTED)
    first = [COLOCATE_WITH, *(table for table in distributed if table != COLOCATE_WITH)]
    lines.append(f"SELECT create_distributed_table('{COLOCATE_WITH}', '{DISTRIBUTION_COLUMN}');")
    lines += [
        f"SELECT create_distributed_table('{table}', '{DISTRIBUTION_COLUMN}', colocate_with => '{COLOCATE_WITH}');"
        for table in first[1:]
    ]
    lines += [
        f"SELECT create_distributed_function('{signature}', '{argument}', "
        f"colocate_with => '{COLOCATE_WITH}', force_delegation => true);"
        for signature, argument in DELEGATED_FUNCTIONS
    ]
    lines.append("COMMIT;")
    return "\n".join(lines) + "\n"
