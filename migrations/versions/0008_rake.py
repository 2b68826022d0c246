"""Rake: the operator's share of each pot. A `revenue` account kind (one per tenant and currency, where
every rake is posted), and rake terms on tables and as tenant defaults.

A game's own rake terms live in its rules state (`state.config.rake_bps`, `rake_cap`) and in its signed
receipt, so the game row needs no column for them.

The account kind is a CHECK constraint, replaced with the wider list.

Revision ID: 0008_rake
Revises: 0007_webhooks
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_rake"
down_revision = "0007_webhooks"
branch_labels = None
depends_on = None

_KINDS_BEFORE = "kind IN ('player_wallet', 'game_pot', 'house', 'external_funding')"
_KINDS_AFTER = "kind IN ('player_wallet', 'game_pot', 'house', 'external_funding', 'revenue')"


def upgrade() -> None:
    _replace_account_kinds(_KINDS_BEFORE, _KINDS_AFTER)
    for table in ("game_table", "tenant"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("rake_bps", sa.Integer(), server_default=sa.text("0"), nullable=False))
            batch.add_column(sa.Column("rake_cap", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    for table in ("tenant", "game_table"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("rake_cap")
            batch.drop_column("rake_bps")
    _replace_account_kinds(_KINDS_AFTER, _KINDS_BEFORE)


def _replace_account_kinds(before: str, after: str) -> None:
    """`before` is what the constraint held; PostgreSQL replaces it whole with `after`."""
    op.drop_constraint(op.f("ck_account_kind_known"), "account", type_="check")
    op.create_check_constraint(op.f("ck_account_kind_known"), "account", after)
