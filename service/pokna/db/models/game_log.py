"""The tenant's public log of finished games (migrations/versions/0018_game_log.py; docs/fairness.md).

Rows are only ever inserted: a leaf, a node or a checkpoint once written is what witnesses may hold, so
changing one would be a fork. `game_log.size` is the one row updated, under the sequencer's lock.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    ForeignKey,
    ForeignKeyConstraint,
    LargeBinary,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from pokna.db.base import Base
from pokna.db.types import UTCDateTime


class GameLog(Base):
    __tablename__ = "game_log"
    __table_args__ = (CheckConstraint("size >= 0", name="size_not_negative"),)

    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class GameLogLeaf(Base):
    __tablename__ = "game_log_leaf"
    __table_args__ = (
        CheckConstraint("leaf_index >= 0", name="index_not_negative"),
        ForeignKeyConstraint(["game_id", "tenant_id"], ["game.id", "game.tenant_id"]),
        UniqueConstraint("game_id", "tenant_id"),
    )

    # Its tenant is its game's: the key (game_id, tenant_id) above implies it (0024_game_write_checks).
    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    leaf_index: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    game_id: Mapped[str] = mapped_column(String(40))
    entry: Mapped[str] = mapped_column(Text)
    appended_at: Mapped[datetime] = mapped_column(UTCDateTime())


class GameLogNode(Base):
    __tablename__ = "game_log_node"
    __table_args__ = (CheckConstraint("octet_length(hash) = 32", name="sha256"),)

    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), primary_key=True)
    level: Mapped[int] = mapped_column(SmallInteger, primary_key=True, autoincrement=False)
    node_index: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    hash: Mapped[bytes] = mapped_column(LargeBinary)


class GameLogCheckpoint(Base):
    __tablename__ = "game_log_checkpoint"

    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), primary_key=True)
    tree_size: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    root_hash: Mapped[bytes] = mapped_column(LargeBinary)
    note: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
