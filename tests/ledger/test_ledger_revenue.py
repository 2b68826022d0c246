"""The operator's revenue: one account per tenant, currency and chain, opened on demand, where every rake of
a game played over HTTP is posted; the exports and bean-check show it as income, and the audit of an export
still balances."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.ledger import AccountKind, chain_for, verify_export
from pokna.ledger.accounts_aio import open_system_account
from pokna.runtime import Runtime
from support.driver import export_beancount, export_csv, export_jsonl
from support.game_play import Api, obliging, play
from support.ledger_reads import revenue_account, trial_balance
from support.sessions import unit_of_work
from support.tenant_api import TenantApi

pytest_plugins = ["ledger_fixtures"]

BEAN_CHECK = Path(sys.executable).with_name("bean-check")


def _raked_game(
    client: TestClient, sessions: sessionmaker[Session], tenant_api: TenantApi
) -> tuple[str, int]:
    """A game over HTTP with a rake of 10% of its pot. Returns the revenue account it went to (the revenue
    sub-account of the game's chain) and the rake taken."""
    api = Api(client, tenant_api.api_key)
    han, greedo = api.wallet(1000), api.wallet(400)
    game = play([api], api.create_game(han, [greedo], stake=100, rake={"bps": 1000}), obliging)
    assert game["status"] == "settled"
    assert game["rake_taken"] > 0
    with unit_of_work(sessions) as session:
        revenue = revenue_account(session, tenant_api.tenant_id, chain=chain_for(game["id"])).id
    return revenue, game["rake_taken"]


def test_one_revenue_account_per_tenant_currency_and_chain(
    runtime: Runtime, sessions: sessionmaker[Session], tenant_id: str
) -> None:
    """Opened as a first rake opens it (in the action's transaction, on its connection), once."""

    async def opened() -> list[str]:
        async with runtime.aio.connection() as connection:
            return [
                await open_system_account(connection, tenant_id, AccountKind.REVENUE, currency, chain)
                for currency, chain in (("CREDIT", 3), ("CREDIT", 3), ("EUR", 3), ("CREDIT", 4))
            ]

    first, again, euro, other_chain = asyncio.run(opened())
    assert first == again
    assert len({first, euro, other_chain}) == 3
    with unit_of_work(sessions) as session:
        account = revenue_account(session, tenant_id, chain=3)
        assert (account.id, account.kind, account.currency, account.balance) == (
            first,
            AccountKind.REVENUE,
            "CREDIT",
            0,
        )


def test_the_rake_is_revenue_in_every_export(
    client: TestClient, sessions: sessionmaker[Session], tenant_api: TenantApi, tmp_path: Path
) -> None:
    tenant_id = tenant_api.tenant_id
    revenue, rake = _raked_game(client, sessions, tenant_api)
    with unit_of_work(sessions) as session:
        balances = {
            line.account_id: (line.kind, line.balance) for line in trial_balance(session, tenant_id).accounts
        }
        jsonl = "".join(export_jsonl(session, tenant_id))
        rows = list(csv.DictReader(io.StringIO("".join(export_csv(session, tenant_id)))))
        beancount = "".join(export_beancount(session, tenant_id))
    assert balances[revenue] == ("revenue", rake)
    assert sum(balance for _, balance in balances.values()) == 0

    raked = [json.loads(line) for line in jsonl.splitlines() if json.loads(line)["kind"] == "rake"]
    assert len(raked) == 1
    assert {posting["account_id"]: posting["amount"] for posting in raked[0]["postings"]}[revenue] == rake
    assert [
        (row["account_id"], row["amount"])
        for row in rows
        if row["kind"] == "rake" and row["account_id"] == revenue
    ] == [(revenue, str(rake))]
    report = verify_export(jsonl.splitlines())
    assert report.valid, report.findings
    assert report.balances[revenue] == rake

    income = "Income:Pokna:Revenue:" + revenue.replace("acct_", "Acct-")
    assert f"open {income} CREDIT" in beancount
    assert f"  {income}  {rake} CREDIT" in beancount
    assert f"balance {income}  {rake} CREDIT" in beancount
    path = tmp_path / "pokna.beancount"
    path.write_text(beancount, encoding="utf-8")
    checked = subprocess.run([str(BEAN_CHECK), str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
