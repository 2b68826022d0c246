"""The one place where the database is chosen: engines, and the storage implementation of each domain.

Each domain that has to speak the two backends differently declares one interface and its two
implementations in its own package; this module picks them once per engine and hangs them on every
session it makes (`pokna.db.stores.store_of` finds them again). Business code never asks which database
it is on.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.backend import Backend, backend_of
from pokna.db.engine import make_engine
from pokna.db.stores import STORES_KEY
from pokna.dealer.store import GameStore
from pokna.dealer.store_portable import PortableGameStore
from pokna.dealer.store_postgres import PostgresGameStore
from pokna.ledger.store import LedgerStore
from pokna.ledger.store_postgresql import PostgresqlLedgerStore
from pokna.ledger.store_sqlite import SqliteLedgerStore

__all__ = ["make_engine", "make_sessionmaker", "stores_for"]


def stores_for(backend: Backend) -> dict[type[Any], Any]:
    """Every domain's storage implementation for `backend`, keyed by the domain's interface."""
    match backend:
        case Backend.POSTGRESQL:
            return {GameStore: PostgresGameStore(), LedgerStore: PostgresqlLedgerStore()}
        case Backend.SQLITE:
            return {GameStore: PortableGameStore(), LedgerStore: SqliteLedgerStore()}


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(
        bind=engine,
        expire_on_commit=False,
        autoflush=False,
        info={STORES_KEY: stores_for(backend_of(engine))},
    )
