"""Every finished game in its tenant's public log (issue 47): an append-only Merkle tree, RFC 9162.

- `game_log`: one row per tenant, the log's size; the sequencer takes it `FOR UPDATE SKIP LOCKED`, so
  several sequencer processes append to one tenant's log one at a time and never wait on each other;
- `game_log_leaf`: leaf `leaf_index` of the tenant's log, the game it logs (one leaf a game: unique) and the
  leaf's entry, the exact bytes hashed into the tree (pokna_verify.tlog.game_leaf);
- `game_log_node`: the hash of every complete subtree, `level` L holding 2**L leaves, the `node_index`-th
  such block (pokna_verify.tlog.tree): a proof reads O(log n) of them and an append reads the frontier;
- `game_log_checkpoint`: every signed checkpoint (a C2SP signed note) by tree size, kept so old
  checkpoints stay servable and consistency proofs can be asked from any of them;
- `game.log_index`: the game's leaf once logged. The partial index on the games finished and not yet logged
  is what the sequencer reads, so finding its next batch costs the batch, not the tenant's history.

Every table carries `tenant_id` in its keys: on Citus the log lives on its tenant's shard (docs/scaling.md).

Revision ID: 0018_game_log
Revises: 0017_ledger_post_document
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_game_log"
down_revision = "0017_ledger_post_document"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "game_log",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("size >= 0", name=op.f("ck_game_log_size_not_negative")),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name=op.f("fk_game_log_tenant_id_tenant")),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_game_log")),
    )
    op.create_table(
        "game_log_leaf",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("leaf_index", sa.BigInteger(), nullable=False),
        sa.Column("game_id", sa.String(length=40), nullable=False),
        sa.Column("entry", sa.Text(), nullable=False),
        sa.Column("appended_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("leaf_index >= 0", name=op.f("ck_game_log_leaf_index_not_negative")),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name=op.f("fk_game_log_leaf_tenant_id_tenant")),
        sa.ForeignKeyConstraint(
            ["game_id", "tenant_id"],
            ["game.id", "game.tenant_id"],
            name=op.f("fk_game_log_leaf_game_id_game"),
        ),
        sa.PrimaryKeyConstraint("tenant_id", "leaf_index", name=op.f("pk_game_log_leaf")),
        sa.UniqueConstraint("game_id", "tenant_id", name=op.f("uq_game_log_leaf_game_id_tenant_id")),
    )
    op.create_table(
        "game_log_node",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("node_index", sa.BigInteger(), nullable=False),
        sa.Column("hash", sa.LargeBinary(), nullable=False),
        sa.CheckConstraint("octet_length(hash) = 32", name=op.f("ck_game_log_node_sha256")),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name=op.f("fk_game_log_node_tenant_id_tenant")),
        sa.PrimaryKeyConstraint("tenant_id", "level", "node_index", name=op.f("pk_game_log_node")),
    )
    op.create_table(
        "game_log_checkpoint",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("tree_size", sa.BigInteger(), nullable=False),
        sa.Column("root_hash", sa.LargeBinary(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenant.id"], name=op.f("fk_game_log_checkpoint_tenant_id_tenant")
        ),
        sa.PrimaryKeyConstraint("tenant_id", "tree_size", name=op.f("pk_game_log_checkpoint")),
    )
    op.add_column("game", sa.Column("log_index", sa.BigInteger(), nullable=True))
    op.create_index(
        "ix_game_awaiting_log",
        "game",
        ["tenant_id", "ended_at", "id"],
        unique=False,
        postgresql_where=sa.text("log_index IS NULL AND status IN ('settled', 'cancelled')"),
    )


def downgrade() -> None:
    op.drop_index("ix_game_awaiting_log", table_name="game")
    op.drop_column("game", "log_index")
    op.drop_table("game_log_checkpoint")
    op.drop_table("game_log_node")
    op.drop_table("game_log_leaf")
    op.drop_table("game_log")
