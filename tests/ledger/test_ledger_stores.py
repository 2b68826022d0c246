"""The ledger's storage is hung on every session, and implements the whole interface."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from pokna.db.stores import store_of
from pokna.ledger.store import LedgerStore
from pokna.ledger.store_postgresql import PostgresqlLedgerStore
from pokna.storage import stores

INTERFACE = [
    name for name, value in vars(LedgerStore).items() if callable(value) and not name.startswith("_")
]


def test_the_store_overrides_every_method() -> None:
    store = stores()[LedgerStore]
    assert isinstance(store, LedgerStore)
    assert INTERFACE == ["post", "jsonl_lines"]
    for name in INTERFACE:
        assert getattr(type(store), name) is not getattr(LedgerStore, name), name


def test_a_session_finds_the_store(sessions: sessionmaker[Session]) -> None:
    with sessions() as session:
        assert type(store_of(session, LedgerStore)) is PostgresqlLedgerStore
