from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from pokna.db.base import Base
from pokna.db.types import UTCDateTime, utc_now


class Tenant(Base):
    """An integrating app. Every other resource belongs to exactly one tenant."""

    __tablename__ = "tenant"
    # `text` as the delegated functions take it (Citus compares the two by type; migration 0015).
    __table_args__ = (CheckConstraint("char_length(id) <= 40", name="id_length"),)

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)
    # The rake terms a new game or table takes when its request names none (migrations/versions/0008_rake.py).
    rake_bps: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    rake_cap: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # The fairness mode a new game takes when its request names none (migrations/versions/0013_beacon_rolls.py).
    fairness_mode: Mapped[str] = mapped_column(String(16), default="stake", server_default=text("'stake'"))


class ApiKey(Base):
    """A bearer credential. Only the SHA-256 of the secret is stored; the key is shown once."""

    __tablename__ = "api_key"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), index=True)
    secret_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
