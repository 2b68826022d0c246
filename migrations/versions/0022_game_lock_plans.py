"""The game's tenant index goes: a game's lock finds its row by the primary key alone.

`ix_game_tenant_id` (tenant_id alone) served no statement that other indexes do not serve better: a game is
read by its id and tenant (`pk_game`, id then tenant_id), a tenant's due games by `ix_game_turn_deadline_at`, a
table's rounds by `ix_game_table_id`, the public log's backlog by `ix_game_awaiting_log` (tenant first), a link
by `uq_game_public_token_tenant_id`. But while the tables were empty, a connection's cached generic plan for a
game's lock took it (an estimate of one row ties the two indexes, and the smaller wins), then read every game
of the tenant on each action as the table grew, until an ANALYZE replanned it (bench/README.md, "The soak's
decline"). Without it the lock has one index to take. Every game update also writes one index fewer (none of
a game's updates is HOT: an indexed column changes on each step).

Revision ID: 0022_game_lock_plans
Revises: 0021_typed_documents
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision = "0022_game_lock_plans"
down_revision = "0021_typed_documents"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_game_tenant_id", table_name="game")


def downgrade() -> None:
    op.create_index("ix_game_tenant_id", "game", ["tenant_id"], unique=False)
