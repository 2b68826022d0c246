"""The export route and `pokna ledger export` read through the same exporters (pokna.ledger.export_aio),
each in a transaction of its own: the two must write the same bytes, in every format, over every kind of
range, across pages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

import pokna.cli.ledger  # noqa: F401  (registers `ledger`)
from pokna.cli.app import app
from pokna.ledger import chain_for, store_postgresql
from pokna.settings import get_settings
from support.game_play import Api, new_tenant_key


def test_the_command_writes_the_bytes_the_route_streams(
    client: TestClient,
    sessions: sessionmaker[Session],
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Pages of two transactions: every chain below spans several, so a page boundary falls mid-chain.
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
    monkeypatch.setenv("POKNA_DATABASE_URL", database_url)
    monkeypatch.setenv("POKNA_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    written = tmp_path / "export"
    try:
        for export_format in ("jsonl", "csv", "beancount"):
            for bounds in ranges:
                answer = api.get("/v1/ledger/export", format=export_format, **bounds)
                assert answer.status_code == 200, answer.text
                options = [f"--{name.replace('_', '-')}={value}" for name, value in bounds.items()]
                command = ["ledger", "export", "--tenant", tenant_id, "--format", export_format, *options]
                result = CliRunner().invoke(app, [*command, "-o", str(written)])
                assert result.exit_code == 0, result.output
                assert written.read_bytes() == answer.text.encode(), (export_format, bounds)
    finally:
        get_settings.cache_clear()
    assert whole.text.count("\n") == 6 + 9
