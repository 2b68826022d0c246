"""Tenant ids are `text`, the type the delegated functions take them as (issue 34, docs/scaling.md).

On Citus, `ledger_post()`, `game_write()`, `ledger_move()` and `beacon_roll_write()` run on the worker that
holds their tenant's shards (`force_delegation`), and Citus then checks every statement inside them against
the tenant argument the call was routed by, comparing the two constants by type and type modifier. The
functions take `p_tenant_id text`; every `tenant_id` column was `varchar(40)`, so each statement's shard key
was a `varchar(40)` constant and the first keyed deposit was refused ("queries must filter by the
distribution argument in the same colocation group"). A function's argument cannot carry a type modifier,
so the columns become `text`.

`varchar(n)` to `text` is binary-coercible: PostgreSQL rewrites no table and rebuilds no index. The 40
characters `tenant.id` was limited to stay a CHECK on `tenant.id`; every other column is a foreign key to it.

Run it before the database is distributed: Citus does not alter a distribution column's type. No Citus
database of Pokna's could exist before it (the distribution first worked with this revision).

Revision ID: 0015_tenant_id_text
Revises: 0014_ledger_chains
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_tenant_id_text"
down_revision = "0014_ledger_chains"
branch_labels = None
depends_on = None

TENANT_OWNED = (
    "account",
    "api_key",
    "game",
    "game_event",
    "game_link",
    "game_roll",
    "game_seat",
    "game_table",
    "idempotency_record",
    "journal_transaction",
    "ledger_checkpoint",
    "ledger_head",
    "posting",
    "webhook_delivery",
    "webhook_endpoint",
    "webhook_event",
)


def upgrade() -> None:
    op.alter_column("tenant", "id", type_=sa.Text(), existing_nullable=False)
    for table in TENANT_OWNED:
        op.alter_column(table, "tenant_id", type_=sa.Text(), existing_nullable=False)
    op.create_check_constraint("id_length", "tenant", "char_length(id) <= 40")


def downgrade() -> None:
    # Citus refuses to change a distribution column's type: say so rather than fail halfway.
    op.execute(
        """
DO $$
DECLARE
    distributed boolean := false;
BEGIN
    IF to_regclass('pg_dist_partition') IS NOT NULL THEN  -- Citus's catalog, read only where it exists
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_dist_partition)' INTO distributed;
    END IF;
    IF distributed THEN
        RAISE EXCEPTION 'tenant ids stay text on a distributed (Citus) database: 0015 cannot be downgraded here';
    END IF;
END
$$"""
    )
    op.drop_constraint("id_length", "tenant", type_="check")
    for table in TENANT_OWNED:
        op.alter_column(table, "tenant_id", type_=sa.String(40), existing_nullable=False)
    op.alter_column("tenant", "id", type_=sa.String(40), existing_nullable=False)
