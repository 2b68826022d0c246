"""The double-entry ledger's tables. The schema is migrations/versions/0002_ledger.py (and its successors);
the functions and triggers in force are service/pokna/sql/.

Postings are signed: an account's balance is the sum of its postings, and every journal transaction's
postings sum to zero per currency. Rows of `journal_transaction`, `posting` and `ledger_checkpoint` are
append-only; `account.balance` is maintained by the database itself when a posting is inserted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from pokna.db.base import Base
from pokna.db.types import UTCDateTime, utc_now

# Bounds shared with the migration's CHECK constraints (pokna.ledger.model re-exports them).
MAX_POSTING_AMOUNT = 10**15
MAX_ABS_BALANCE = 10**18
ACCOUNT_KINDS = ("player_wallet", "game_pot", "house", "external_funding", "revenue")


class Account(Base):
    """Somewhere credits live. Player wallets and game pots can never go below zero."""

    __tablename__ = "account"
    __table_args__ = (
        UniqueConstraint("tenant_id", "kind", "external_id"),
        CheckConstraint(
            "kind IN ('player_wallet', 'game_pot', 'house', 'external_funding', 'revenue')", name="kind_known"
        ),
        CheckConstraint(
            "balance >= 0 OR kind NOT IN ('player_wallet', 'game_pot')", name="balance_non_negative"
        ),
        CheckConstraint(f"balance BETWEEN {-MAX_ABS_BALANCE} AND {MAX_ABS_BALANCE}", name="balance_bounded"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), primary_key=True, index=True)
    kind: Mapped[str] = mapped_column(String(32))
    currency: Mapped[str] = mapped_column(String(16), default="CREDIT")
    external_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    balance: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    # The game whose accepted beacon roll holds this wallet: no money leaves it until the roll resolves.
    roll_hold_game_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)


# pokna_verify.ledger.chain.LEDGER_CHAINS chains (tests/ledger/test_ledger_chains.py holds the two equal).
CHAIN_IN_RANGE = "chain BETWEEN 0 AND 15"


class JournalTransaction(Base):
    """One balanced, immutable, hash-chained entry in a tenant's journal."""

    __tablename__ = "journal_transaction"
    __table_args__ = (
        UniqueConstraint("tenant_id", "chain", "seq"),
        CheckConstraint("seq >= 1", name="seq_positive"),
        CheckConstraint(CHAIN_IN_RANGE, name="chain_in_range"),
        CheckConstraint("posting_count >= 2", name="at_least_two_postings"),
        CheckConstraint("length(prev_hash) = 64 AND length(hash) = 64", name="hash_length"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), primary_key=True)
    # Which of the tenant's hash chains the transaction is on; `seq` counts per chain (docs/ledger.md).
    chain: Mapped[int] = mapped_column(SmallInteger, default=0, server_default=text("0"))
    seq: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(32))
    reference: Mapped[str | None] = mapped_column(String(200), nullable=True)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON)
    # How many postings this transaction has; fixed at insert, so none can be added later.
    posting_count: Mapped[int] = mapped_column(SmallInteger)
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)

    # Read-only: postings are written by pokna.ledger alone, and loaded only when asked for. Joined without a
    # foreign key: since 0020 the posting trigger ties a posting to its transaction (docs/ledger.md, "What the
    # database checks per posting, and how").
    postings: Mapped[list[JournalPosting]] = relationship(
        lazy="raise",
        order_by="JournalPosting.leg",
        viewonly=True,
        primaryjoin="and_(JournalTransaction.id == foreign(JournalPosting.transaction_id), "
        "JournalTransaction.tenant_id == foreign(JournalPosting.tenant_id))",
    )


class JournalPosting(Base):
    """One signed leg of a journal transaction. `leg` orders the legs inside their transaction."""

    __tablename__ = "posting"
    # No foreign keys (0020_posting_checks): trg_posting_apply refuses a posting of no transaction or no
    # account of its tenant, and ledger_account_guard() keeps an account some posting names.
    __table_args__ = (
        UniqueConstraint("transaction_id", "leg", "tenant_id"),
        # An account's page of transactions, newest first, read from here alone (docs/ledger.md, "Reading an
        # account"); its prefix finds whether any posting names an account (ledger_account_guard).
        Index("ix_posting_account_time", "tenant_id", "account_id", "created_at", "transaction_id"),
        CheckConstraint("leg >= 0", name="leg_non_negative"),
        CheckConstraint(
            f"amount <> 0 AND amount BETWEEN {-MAX_POSTING_AMOUNT} AND {MAX_POSTING_AMOUNT}",
            name="amount_non_zero_bounded",
        ),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    transaction_id: Mapped[str] = mapped_column(String(40))
    leg: Mapped[int] = mapped_column(Integer)
    account_id: Mapped[str] = mapped_column(String(40))
    amount: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(16))
    # Its transaction's created_at, copied so that an account's postings are in time order by themselves
    # (0025_posting_created_at); the posting trigger refuses any other.
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class LedgerHead(Base):
    """The head of one of a tenant's chains. Locking this row serializes the chain's writers, so it never forks."""

    __tablename__ = "ledger_head"
    __table_args__ = (CheckConstraint(CHAIN_IN_RANGE, name="chain_in_range"),)

    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), primary_key=True)
    chain: Mapped[int] = mapped_column(SmallInteger, primary_key=True, server_default=text("0"))
    last_seq: Mapped[int] = mapped_column(BigInteger)
    last_hash: Mapped[str] = mapped_column(String(64))


class LedgerCheckpoint(Base):
    """An Ed25519-signed statement of a tenant's chain head at some moment; auditors pin exports to it."""

    __tablename__ = "ledger_checkpoint"
    __table_args__ = (Index("ix_ledger_checkpoint_tenant_id_seq", "tenant_id", "seq"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenant.id"), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger)
    hash: Mapped[str] = mapped_column(String(64))
    # Every chain's head [{chain, seq, hash}] (seq/hash above are chain 0's); null before there were chains.
    heads: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)
    key_id: Mapped[str] = mapped_column(String(64))
    signature: Mapped[str] = mapped_column(String(128))
