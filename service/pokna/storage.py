"""The composition root of storage: each domain's store, hung on every session this factory makes.

A domain declares its storage interface in its own package (`ledger/store.py`, `dealer/store.py`) and
implements it on PostgreSQL; this module builds them once per session factory and
`pokna.db.stores.store_of` finds them again on a session. Tests hold every implementation to its
interface (tests/ledger/test_ledger_stores.py, tests/dealer/test_dealer_store.py).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import make_engine
from pokna.db.stores import STORES_KEY
from pokna.dealer.store import GameStore
from pokna.dealer.store_postgres import PostgresGameStore
from pokna.ledger.store import LedgerStore
from pokna.ledger.store_postgresql import PostgresqlLedgerStore

__all__ = ["make_engine", "make_sessionmaker", "stores"]


def stores() -> dict[type[Any], Any]:
    """Every domain's storage implementation, keyed by the domain's interface."""
    return {GameStore: PostgresGameStore(), LedgerStore: PostgresqlLedgerStore()}


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=False, info={STORES_KEY: stores()})
