"""The ledger's storage is chosen once per backend, and each choice implements the whole interface."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.backend import Backend
from pokna.db.stores import store_of
from pokna.ledger.store import LedgerStore
from pokna.ledger.store_postgresql import PostgresqlLedgerStore
from pokna.ledger.store_sqlite import SqliteLedgerStore
from pokna.storage import stores_for

INTERFACE = [
    name for name, value in vars(LedgerStore).items() if callable(value) and not name.startswith("_")
]


@pytest.mark.parametrize("database", list(Backend))
def test_every_backend_has_a_store_that_overrides_every_method(database: Backend) -> None:
    store = stores_for(database)[LedgerStore]
    assert isinstance(store, LedgerStore)
    assert INTERFACE == ["post", "jsonl_lines"]
    for name in INTERFACE:
        assert getattr(type(store), name) is not getattr(LedgerStore, name), (database, name)


def test_a_session_finds_the_store_of_its_database(sessions: sessionmaker[Session], backend: str) -> None:
    expected = PostgresqlLedgerStore if backend == "postgresql" else SqliteLedgerStore
    with sessions() as session:
        assert type(store_of(session, LedgerStore)) is expected
