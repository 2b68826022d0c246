"""Webhooks: the outbox of events, the tenants' endpoints, and each event's delivery to each endpoint.

Revision ID: 0007_webhooks
Revises: 0006_fairness_link
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_webhooks"
down_revision = "0006_fairness_link"
branch_labels = None
depends_on = None

SEQ = sa.BigInteger()


def upgrade() -> None:
    op.create_table(
        "webhook_event",
        sa.Column("seq", SEQ, autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("ordering_key", sa.String(length=64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("dispatched_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name=op.f("fk_webhook_event_tenant_id_tenant")),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_webhook_event")),
        sa.UniqueConstraint("id", name=op.f("uq_webhook_event_id")),
    )
    op.create_index("ix_webhook_event_tenant_id", "webhook_event", ["tenant_id"], unique=False)
    op.create_index("ix_webhook_event_dispatched_at", "webhook_event", ["dispatched_at"], unique=False)

    op.create_table(
        "webhook_endpoint",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("description", sa.String(length=200), nullable=True),
        sa.Column("event_types", sa.JSON(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("sealed_secret", sa.String(length=200), nullable=False),
        sa.Column("sealed_previous_secret", sa.String(length=200), nullable=True),
        sa.Column("previous_secret_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenant.id"], name=op.f("fk_webhook_endpoint_tenant_id_tenant")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_endpoint")),
    )
    op.create_index("ix_webhook_endpoint_tenant_id", "webhook_endpoint", ["tenant_id"], unique=False)

    op.create_table(
        "webhook_delivery",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("event_seq", SEQ, nullable=False),
        sa.Column("endpoint_id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.Column("ordering_key", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("attempt_limit", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claim_token", sa.String(length=32), nullable=True),
        sa.Column("last_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_duration_ms", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(length=32), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'sending', 'delivered', 'failed')",
            name=op.f("ck_webhook_delivery_status_known"),
        ),
        sa.ForeignKeyConstraint(
            ["endpoint_id"],
            ["webhook_endpoint.id"],
            name=op.f("fk_webhook_delivery_endpoint_id_webhook_endpoint"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["event_seq"],
            ["webhook_event.seq"],
            name=op.f("fk_webhook_delivery_event_seq_webhook_event"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenant.id"], name=op.f("fk_webhook_delivery_tenant_id_tenant")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_delivery")),
        sa.UniqueConstraint(
            "event_seq", "endpoint_id", name=op.f("uq_webhook_delivery_event_seq_endpoint_id")
        ),
    )
    op.create_index("ix_webhook_delivery_tenant_id", "webhook_delivery", ["tenant_id"], unique=False)
    op.create_index(
        "ix_webhook_delivery_due", "webhook_delivery", ["status", "next_attempt_at"], unique=False
    )
    op.create_index(
        "ix_webhook_delivery_endpoint_order",
        "webhook_delivery",
        ["endpoint_id", "ordering_key", "event_seq"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_table("webhook_delivery")
    op.drop_table("webhook_endpoint")
    op.drop_table("webhook_event")
