"""Games, tables, their rolls and events, and the idempotency records of POST requests.

Revision ID: 0003_games
Revises: 0002_ledger
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_games"
down_revision = "0002_ledger"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "game_table",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("account_ids", sa.JSON(), nullable=False),
        sa.Column("stake", sa.BigInteger(), nullable=False),
        sa.Column("challenge_raise", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=16), nullable=False),
        sa.Column("turn_timeout_seconds", sa.Integer(), nullable=False),
        sa.Column("rounds_played", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name=op.f("fk_game_table_tenant_id_tenant")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_game_table")),
    )
    op.create_index("ix_game_table_tenant_id", "game_table", ["tenant_id"], unique=False)

    op.create_table(
        "idempotency_record",
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("request_fingerprint", sa.String(length=64), nullable=False),
        sa.Column("claim_token", sa.String(length=32), nullable=False),
        sa.Column("response_status", sa.Integer(), nullable=True),
        sa.Column("response_body", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenant.id"], name=op.f("fk_idempotency_record_tenant_id_tenant")
        ),
        sa.PrimaryKeyConstraint("tenant_id", "key", name=op.f("pk_idempotency_record")),
    )
    op.create_index("ix_idempotency_record_expires_at", "idempotency_record", ["expires_at"], unique=False)

    op.create_table(
        "game",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("table_id", sa.String(length=40), nullable=True),
        sa.Column("round_number", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("stake", sa.BigInteger(), nullable=False),
        sa.Column("challenge_raise", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=16), nullable=False),
        sa.Column("turn_timeout_seconds", sa.Integer(), nullable=False),
        sa.Column("pot_account_id", sa.String(length=40), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("event_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("server_seed_hash", sa.String(length=64), nullable=False),
        sa.Column("sealed_server_seed", sa.String(length=200), nullable=False),
        sa.Column("revealed_server_seed", sa.String(length=64), nullable=True),
        sa.Column("game_client_seed", sa.String(length=64), nullable=True),
        sa.Column("receipt", sa.JSON(), nullable=False),
        sa.Column("proof", sa.JSON(), nullable=True),
        sa.Column("turn_deadline_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["pot_account_id"], ["account.id"], name=op.f("fk_game_pot_account_id_account")
        ),
        sa.ForeignKeyConstraint(["table_id"], ["game_table.id"], name=op.f("fk_game_table_id_game_table")),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name=op.f("fk_game_tenant_id_tenant")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_game")),
        sa.CheckConstraint(
            "status IN ('open', 'in_progress', 'settled', 'cancelled')", name=op.f("ck_game_status_known")
        ),
    )
    op.create_index("ix_game_status", "game", ["status"], unique=False)
    op.create_index("ix_game_table_id", "game", ["table_id"], unique=False)
    op.create_index("ix_game_tenant_id", "game", ["tenant_id"], unique=False)
    op.create_index("ix_game_turn_deadline_at", "game", ["turn_deadline_at"], unique=False)

    op.create_table(
        "game_event",
        sa.Column("game_id", sa.String(length=40), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["game_id"], ["game.id"], name=op.f("fk_game_event_game_id_game")),
        sa.PrimaryKeyConstraint("game_id", "seq", name=op.f("pk_game_event")),
    )
    op.create_table(
        "game_roll",
        sa.Column("game_id", sa.String(length=40), nullable=False),
        sa.Column("nonce", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("purpose", sa.String(length=32), nullable=False),
        sa.Column("face", sa.Integer(), nullable=False),
        sa.Column("color", sa.String(length=8), nullable=False),
        sa.Column("rolled_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["game_id"], ["game.id"], name=op.f("fk_game_roll_game_id_game")),
        sa.PrimaryKeyConstraint("game_id", "nonce", name=op.f("pk_game_roll")),
        sa.CheckConstraint("face BETWEEN 1 AND 6", name=op.f("ck_game_roll_face_on_cube")),
        sa.CheckConstraint("nonce >= 0", name=op.f("ck_game_roll_nonce_non_negative")),
    )
    op.create_table(
        "game_seat",
        sa.Column("game_id", sa.String(length=40), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.String(length=40), nullable=False),
        sa.Column("client_seed", sa.String(length=64), nullable=True),
        sa.Column("client_seed_source", sa.String(length=16), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], name=op.f("fk_game_seat_account_id_account")),
        sa.ForeignKeyConstraint(["game_id"], ["game.id"], name=op.f("fk_game_seat_game_id_game")),
        sa.PrimaryKeyConstraint("game_id", "seat", name=op.f("pk_game_seat")),
        sa.UniqueConstraint("game_id", "account_id", name=op.f("uq_game_seat_game_id_account_id")),
    )
    op.create_index("ix_game_seat_account_id", "game_seat", ["account_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_game_seat_account_id", table_name="game_seat")

    op.drop_table("game_seat")
    op.drop_table("game_roll")
    op.drop_table("game_event")
    op.drop_index("ix_game_turn_deadline_at", table_name="game")
    op.drop_index("ix_game_tenant_id", table_name="game")
    op.drop_index("ix_game_table_id", table_name="game")
    op.drop_index("ix_game_status", table_name="game")

    op.drop_table("game")
    op.drop_index("ix_idempotency_record_expires_at", table_name="idempotency_record")

    op.drop_table("idempotency_record")
    op.drop_index("ix_game_table_tenant_id", table_name="game_table")

    op.drop_table("game_table")
