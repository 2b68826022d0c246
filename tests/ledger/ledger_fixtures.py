"""Ledger fixtures (imported by each ledger test module): a tenant of its own in a fresh migrated database."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import unit_of_work
from pokna.db.models.tenant import Tenant
from pokna.db.types import new_id, utc_now


@pytest.fixture
def make_tenant(sessions: sessionmaker[Session]) -> Callable[[], str]:
    def make() -> str:
        tenant_id = new_id("ten")
        with unit_of_work(sessions) as session:
            session.add(Tenant(id=tenant_id, name="Jabba's Palace", created_at=utc_now()))
        return tenant_id

    return make


@pytest.fixture
def tenant_id(make_tenant: Callable[[], str]) -> str:
    return make_tenant()


@pytest.fixture
def on_chain_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every posting on chain 0, as the whole journal was before there were chains: for tests of one chain's
    seqs and links (an export of such a journal is what every export was then). Exports across several
    chains are tests/ledger/test_ledger_export_chains.py's."""
    monkeypatch.setattr("pokna.ledger.posting.chain_for", lambda _key: 0)
    monkeypatch.setattr("pokna.ledger.moving.chain_for", lambda _key: 0)
