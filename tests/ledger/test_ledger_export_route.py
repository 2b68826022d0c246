"""The export route reads on the async road (pokna.ledger.export_aio), the commands on a session
(pokna.ledger.export): the two must stream the same bytes, in every format, over every kind of range,
across pages."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import unit_of_work
from pokna.ledger import chain_for, export_aio, export_lines, store_postgresql
from support.game_play import Api, new_tenant_key


def test_the_route_streams_the_bytes_the_session_export_writes(
    client: TestClient, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pages of two transactions: every chain below spans several, so a page boundary falls mid-chain.
    monkeypatch.setattr(export_aio, "PAGE_TRANSACTIONS", 2)
    monkeypatch.setattr(store_postgresql, "PAGE_TRANSACTIONS", 2)
    api = Api(client, new_tenant_key(sessions))
    wallets = [api.wallet(10 + index) for index in range(6)]
    for wallet in wallets[:3]:
        for amount in (1, 2, 3):
            api.ok(api.withdraw(wallet, amount), 201)
    whole = api.get("/v1/ledger/export")
    assert whole.status_code == 200, whole.text
    tenant_id = json.loads(whole.text.splitlines()[0])["tenant_id"]
    chain = chain_for(wallets[0])
    ranges: list[dict[str, int]] = [
        {},
        {"chain": chain},
        {"chain": chain, "from_seq": 2},
        {"chain": chain, "from_seq": 2, "to_seq": 3},
        {"chain": chain, "from_seq": 99},
        {"chain": next(other for other in range(16) if other not in map(chain_for, wallets))},
    ]
    for export_format in ("jsonl", "csv", "beancount"):
        for bounds in ranges:
            answer = api.get("/v1/ledger/export", format=export_format, **bounds)
            assert answer.status_code == 200, answer.text
            with unit_of_work(sessions) as session:
                expected = "".join(export_lines(session, tenant_id, export_format, **bounds))
            assert answer.text == expected, (export_format, bounds)
    assert whole.text.count("\n") == 6 + 9
