"""The ledger's storage implements the whole interface, and the export uses it."""

from __future__ import annotations

from pokna.ledger import export
from pokna.ledger.store import LedgerStore
from pokna.ledger.store_postgresql import PostgresqlLedgerStore

INTERFACE = [
    name for name, value in vars(LedgerStore).items() if callable(value) and not name.startswith("_")
]


def test_the_store_overrides_every_method() -> None:
    store = PostgresqlLedgerStore()
    assert isinstance(store, LedgerStore)
    assert INTERFACE == ["jsonl_lines"]
    for name in INTERFACE:
        assert getattr(type(store), name) is not getattr(LedgerStore, name), name


def test_the_export_uses_the_postgresql_store() -> None:
    assert type(export._LEDGER_STORE) is PostgresqlLedgerStore
