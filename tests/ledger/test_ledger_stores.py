"""The ledger's storage implements the whole interface, and the posting path uses it."""

from __future__ import annotations

from pokna.ledger import export, posting
from pokna.ledger.store import LedgerStore
from pokna.ledger.store_postgresql import PostgresqlLedgerStore

INTERFACE = [
    name for name, value in vars(LedgerStore).items() if callable(value) and not name.startswith("_")
]


def test_the_store_overrides_every_method() -> None:
    store = PostgresqlLedgerStore()
    assert isinstance(store, LedgerStore)
    assert INTERFACE == ["post", "jsonl_lines"]
    for name in INTERFACE:
        assert getattr(type(store), name) is not getattr(LedgerStore, name), name


def test_posting_and_export_use_the_postgresql_store() -> None:
    assert type(posting._LEDGER_STORE) is PostgresqlLedgerStore
    assert type(export._LEDGER_STORE) is PostgresqlLedgerStore
