"""Ledger fixtures (imported by each ledger test module): a tenant of its own in a fresh migrated database;
with an API key, its app's HTTP client (`tenant_api`) or its teller (`teller`: deposits and withdrawals
through the service function the routes call, support.money)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.tenant import Tenant
from pokna.db.types import new_id, utc_now
from pokna.runtime import Runtime
from support.money import Teller, new_teller
from support.sessions import unit_of_work
from support.tenant_api import TenantApi, new_tenant


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
def tenant_api(client: TestClient, sessions: sessionmaker[Session]) -> TenantApi:
    """A tenant of its own with an API key, and its app's HTTP client."""
    return new_tenant(client, sessions)


@pytest.fixture
def teller(runtime: Runtime, sessions: sessionmaker[Session]) -> Teller:
    """A tenant of its own with an API key, moving money as its app would."""
    return new_teller(runtime, sessions)


@pytest.fixture
def on_chain_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every posting on chain 0, as the whole journal was before there were chains: for tests of one chain's
    seqs and links (an export of such a journal is what every export was then). The chain is picked where a
    deposit or withdrawal is drafted (the first free one from its wallet's: its wallet's while nothing else
    posts, as in these tests) and where a game step's transfers are (its game's, and its revenue
    sub-account's, and the lost race's locks). Exports across several chains are
    tests/ledger/test_ledger_export_chains.py's."""
    for module in ("pokna.ledger.moving", "pokna.dealer.action.rules_step", "pokna.ledger"):
        monkeypatch.setattr(f"{module}.chain_for", lambda _key: 0)
