from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from pokna.db.base import Base
from pokna.db.types import UTCDateTime


class GameTable(Base):
    """A table keeps its seat order across rounds; the title of Vigo passes clockwise each round."""

    __tablename__ = "game_table"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), primary_key=True, index=True)
    account_ids: Mapped[list[str]] = mapped_column(JSON)
    stake: Mapped[int] = mapped_column(BigInteger)
    challenge_raise: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(16))
    turn_timeout_seconds: Mapped[int] = mapped_column(Integer)
    rounds_played: Mapped[int] = mapped_column(Integer, default=0)
    # Every round's rake terms (migrations/versions/0008_rake.py); each round's receipt signs them.
    rake_bps: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    rake_cap: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Game(Base):
    """One round. `state` is the rules engine's state; `version` increments on every applied action.

    `event_count` is the seq of the game's last event (events are numbered 1..n with no gaps), kept on the
    row so recording an event needs no `max(seq)` query; it is written with the game's own UPDATE."""

    __tablename__ = "game"
    __table_args__ = (
        CheckConstraint("status IN ('open', 'in_progress', 'settled', 'cancelled')", name="status_known"),
        ForeignKeyConstraint(["table_id", "tenant_id"], ["game_table.id", "game_table.tenant_id"]),
        ForeignKeyConstraint(["pot_account_id", "tenant_id"], ["account.id", "account.tenant_id"]),
        # Unique per tenant; which tenant a token belongs to is GameLink's (a reference table).
        UniqueConstraint("public_token", "tenant_id"),
        # What the public log's sequencer reads: the finished games it has not appended yet.
        Index(
            "ix_game_awaiting_log",
            "tenant_id",
            "ended_at",
            "id",
            postgresql_where=text("log_index IS NULL AND status IN ('settled', 'cancelled')"),
        ),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # No index of its own: the primary key (id, tenant_id) finds a game (0022_game_lock_plans). No foreign
    # key of its own either: the pot account's, (pot_account_id, tenant_id), names an account of the tenant,
    # and an account's tenant exists (0024_game_write_checks; docs/ledger.md, "A game's rows and their tenant").
    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    table_id: Mapped[str | None] = mapped_column(String(40), nullable=True, index=True)
    round_number: Mapped[int | None] = mapped_column(Integer, nullable=True)
    status: Mapped[str] = mapped_column(String(16))
    stake: Mapped[int] = mapped_column(BigInteger)
    challenge_raise: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(16))
    turn_timeout_seconds: Mapped[int] = mapped_column(Integer)
    pot_account_id: Mapped[str] = mapped_column(String(40))
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    version: Mapped[int] = mapped_column(Integer)
    event_count: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    server_seed_hash: Mapped[str] = mapped_column(String(64))
    sealed_server_seed: Mapped[str] = mapped_column(String(200))
    revealed_server_seed: Mapped[str | None] = mapped_column(String(64), nullable=True)
    game_client_seed: Mapped[str | None] = mapped_column(String(64), nullable=True)
    receipt: Mapped[dict[str, Any]] = mapped_column(JSON)
    proof: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The capability behind the game's public fairness link (migrations/versions/0006_fairness_link.py).
    public_token: Mapped[str | None] = mapped_column(String(64), nullable=True)
    turn_deadline_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # A beacon-mode drawing action accepted and waiting for its round (migrations/versions/0013_beacon_rolls.py).
    pending_roll: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The game's leaf in its tenant's public log, once the sequencer appended it (0018_game_log.py).
    log_index: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class GameSeat(Base):
    __tablename__ = "game_seat"
    __table_args__ = (
        UniqueConstraint("game_id", "account_id", "tenant_id"),
        ForeignKeyConstraint(["game_id", "tenant_id"], ["game.id", "game.tenant_id"]),
        ForeignKeyConstraint(["account_id", "tenant_id"], ["account.id", "account.tenant_id"]),
    )

    game_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    seat: Mapped[int] = mapped_column(Integer, primary_key=True)
    # Its tenant is its game's: the key (game_id, tenant_id) above implies it (0024_game_write_checks).
    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    account_id: Mapped[str] = mapped_column(String(40), index=True)
    client_seed: Mapped[str | None] = mapped_column(String(64), nullable=True)
    client_seed_source: Mapped[str | None] = mapped_column(String(16), nullable=True)


class GameRoll(Base):
    """The primary key (game, nonce) makes a repeated nonce impossible, whatever races happen."""

    __tablename__ = "game_roll"
    __table_args__ = (
        CheckConstraint("face BETWEEN 1 AND 6", name="face_on_cube"),
        CheckConstraint("nonce >= 0", name="nonce_non_negative"),
        ForeignKeyConstraint(["game_id", "tenant_id"], ["game.id", "game.tenant_id"]),
    )

    game_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    nonce: Mapped[int] = mapped_column(Integer, primary_key=True)
    # Its tenant is its game's: the key (game_id, tenant_id) above implies it (0024_game_write_checks).
    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    seat: Mapped[int] = mapped_column(Integer)
    purpose: Mapped[str] = mapped_column(String(32))
    face: Mapped[int] = mapped_column(Integer)
    color: Mapped[str] = mapped_column(String(8))
    rolled_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # Beacon mode only: when the drawing action was accepted, and the drand round the roll used.
    accepted_at: Mapped[str | None] = mapped_column(String(24), nullable=True)
    beacon: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class GameEvent(Base):
    """Every roll, decision and money movement, in order; the events endpoint pages through these."""

    __tablename__ = "game_event"
    __table_args__ = (ForeignKeyConstraint(["game_id", "tenant_id"], ["game.id", "game.tenant_id"]),)

    game_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    # Its tenant is its game's: the key (game_id, tenant_id) above implies it (0024_game_write_checks).
    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    occurred_at: Mapped[datetime] = mapped_column(UTCDateTime())


class GameLink(Base):
    """Which tenant a public fairness link's token belongs to: the link is opened without an API key, so
    its tenant is not known until this row is read. A reference table on Citus (pokna.db.distribution),
    read on the node that serves the link; the game is then read on its tenant's shard."""

    __tablename__ = "game_link"

    public_token: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"))
