from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from pokna.db.base import Base
from pokna.db.types import UTCDateTime


class IdempotencyRecord(Base):
    """One `Idempotency-Key` of one tenant: claimed while its request runs, then the stored response.

    The claim is committed on its own so concurrent retries see it; the completion is written in the
    same transaction as the request's own effects, so a stored response exists exactly when they do.
    """

    __tablename__ = "idempotency_record"

    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    request_fingerprint: Mapped[str] = mapped_column(String(64))
    # Fences a request that outlived its lease: only the holder of the current token may complete.
    claim_token: Mapped[str] = mapped_column(String(32))
    response_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    response_body: Mapped[str | None] = mapped_column(Text, nullable=True)
    # When the first attempt began; a retry that takes over an interrupted attempt keeps it.
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # The end of a wall-clock lease in earlier versions; no longer set or read (a claim is live while its
    # holder's transaction holds this row, pokna.idempotency.service), kept for rolling upgrades.
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
