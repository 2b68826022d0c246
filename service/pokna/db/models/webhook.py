"""Webhooks' tables: the outbox of events, the tenants' endpoints and each event's delivery to each endpoint.

An event row is written in the same transaction as the change it describes (gathered by
pokna.outbox.Gathered, written by game_write() or ledger_move() with the change), so it
exists exactly when the change does. The worker fans each event out into one delivery per endpoint that
wants it (pokna.webhooks.dispatch) and sends them (pokna.webhooks.sending). The schema is
migrations/versions/0007_webhooks.py (an endpoint's earlier secrets: 0026_webhook_secret_overlaps.py).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    ARRAY,
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from pokna.db.base import Base
from pokna.db.types import UTCDateTime

SEQ = BigInteger()  # an autoincrementing 64-bit key


class WebhookEvent(Base):
    """One event of the outbox. `seq` orders events in commit order within a game (its writers hold the
    game's lock) and within an account (the ledger's lock); `body` is the exact JSON every attempt sends."""

    __tablename__ = "webhook_event"
    __table_args__ = (UniqueConstraint("id", "tenant_id"),)

    seq: Mapped[int] = mapped_column(SEQ, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(40))
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), primary_key=True, index=True)
    type: Mapped[str] = mapped_column(String(40))
    # What the order of delivery is kept per: a game's id, or an account's for the ledger's events.
    ordering_key: Mapped[str] = mapped_column(String(64))
    body: Mapped[str] = mapped_column(Text)
    occurred_at: Mapped[datetime] = mapped_column(UTCDateTime())
    dispatched_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True, index=True)


class WebhookEndpoint(Base):
    """Where a tenant wants its events sent, and the secret that signs them (sealed at rest). After a
    rotation each earlier secret signs too, until the end of the overlap its own rotation promised:
    `sealed_previous_secrets` and `previous_secrets_expire_at` pair them up, newest first, three at most."""

    __tablename__ = "webhook_endpoint"
    __table_args__ = (
        CheckConstraint(
            "cardinality(sealed_previous_secrets) = cardinality(previous_secrets_expire_at) "
            "AND cardinality(sealed_previous_secrets) <= 3",
            name="previous_secrets_paired",
        ),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), primary_key=True, index=True)
    url: Mapped[str] = mapped_column(String(2048))
    description: Mapped[str | None] = mapped_column(String(200), nullable=True)
    event_types: Mapped[list[str]] = mapped_column(JSON)
    enabled: Mapped[bool] = mapped_column(Boolean)
    sealed_secret: Mapped[str] = mapped_column(String(200))
    sealed_previous_secrets: Mapped[list[str]] = mapped_column(ARRAY(String(200)))
    previous_secrets_expire_at: Mapped[list[datetime]] = mapped_column(ARRAY(DateTime(timezone=True)))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class WebhookDelivery(Base):
    """One event to one endpoint: its status, its attempts so far and when the next one is due.

    `sending` is a claim: one worker holds it until `locked_until` (longer than any attempt can take), and
    only the holder of `claim_token` may record the attempt's result. Nothing of a receiver's answer is kept
    but its status code and how long it took."""

    __tablename__ = "webhook_delivery"
    __table_args__ = (
        UniqueConstraint("event_seq", "endpoint_id", "tenant_id"),
        ForeignKeyConstraint(
            ["event_seq", "tenant_id"], ["webhook_event.seq", "webhook_event.tenant_id"], ondelete="CASCADE"
        ),
        ForeignKeyConstraint(
            ["endpoint_id", "tenant_id"],
            ["webhook_endpoint.id", "webhook_endpoint.tenant_id"],
            ondelete="CASCADE",
        ),
        CheckConstraint("status IN ('pending', 'sending', 'delivered', 'failed')", name="status_known"),
        Index("ix_webhook_delivery_due", "status", "next_attempt_at"),
        Index("ix_webhook_delivery_endpoint_order", "endpoint_id", "ordering_key", "event_seq"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    event_seq: Mapped[int] = mapped_column(SEQ)
    endpoint_id: Mapped[str] = mapped_column(String(40))
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), primary_key=True, index=True)
    ordering_key: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    attempt_limit: Mapped[int] = mapped_column(Integer)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime())
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    claim_token: Mapped[str | None] = mapped_column(String(32), nullable=True)
    last_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_duration_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str | None] = mapped_column(String(32), nullable=True)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
