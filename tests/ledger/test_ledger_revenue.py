"""The operator's revenue: one account per tenant and currency, opened on demand, where every rake is
posted; the exports and bean-check show it as income, and the audit of an export still balances."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import unit_of_work
from pokna.ledger import (
    AccountKind,
    AccountTransfer,
    deposit,
    export_beancount,
    export_csv,
    export_jsonl,
    open_account,
    post_transfers,
    revenue_account,
    trial_balance,
    verify_export,
)

pytest_plugins = ["ledger_fixtures"]

BEAN_CHECK = Path(sys.executable).with_name("bean-check")


def _raked_game(sessions: sessionmaker[Session], tenant_id: str) -> tuple[str, str]:
    """A pot of 200 with a rake of 10: the winner takes 190. Returns (revenue, winner) account ids."""
    with unit_of_work(sessions) as session:
        han = open_account(session, tenant_id=tenant_id, kind="player_wallet", external_id="han").id
        greedo = open_account(session, tenant_id=tenant_id, kind="player_wallet", external_id="greedo").id
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="game-1").id
        deposit(session, tenant_id=tenant_id, account_id=han, amount=1000)
        deposit(session, tenant_id=tenant_id, account_id=greedo, amount=400)
    with unit_of_work(sessions) as session:
        revenue = revenue_account(session, tenant_id).id
        post_transfers(
            session,
            tenant_id=tenant_id,
            reference="game-1",
            transfers=[
                AccountTransfer("ante", han, pot, 100),
                AccountTransfer("ante", greedo, pot, 100),
                AccountTransfer("rake", pot, revenue, 10),
                AccountTransfer("payout", pot, han, 190),
            ],
        )
    return revenue, han


def test_one_revenue_account_per_tenant_and_currency(sessions: sessionmaker[Session], tenant_id: str) -> None:
    with unit_of_work(sessions) as session:
        first = revenue_account(session, tenant_id)
        assert (first.kind, first.currency, first.balance) == (AccountKind.REVENUE, "CREDIT", 0)
    with unit_of_work(sessions) as session:
        assert revenue_account(session, tenant_id).id == first.id
        assert revenue_account(session, tenant_id, "EUR").id != first.id


def test_the_rake_is_revenue_in_every_export(
    sessions: sessionmaker[Session], tenant_id: str, tmp_path: Path
) -> None:
    revenue, _ = _raked_game(sessions, tenant_id)
    with unit_of_work(sessions) as session:
        balances = {
            line.account_id: (line.kind, line.balance) for line in trial_balance(session, tenant_id).accounts
        }
        jsonl = "".join(export_jsonl(session, tenant_id))
        rows = list(csv.DictReader(io.StringIO("".join(export_csv(session, tenant_id)))))
        beancount = "".join(export_beancount(session, tenant_id))
    assert balances[revenue] == ("revenue", 10)
    assert sum(balance for _, balance in balances.values()) == 0

    rake = [json.loads(line) for line in jsonl.splitlines() if json.loads(line)["kind"] == "rake"]
    assert len(rake) == 1
    assert {posting["account_id"]: posting["amount"] for posting in rake[0]["postings"]}[revenue] == 10
    assert [
        (row["account_id"], row["amount"])
        for row in rows
        if row["kind"] == "rake" and row["account_id"] == revenue
    ] == [(revenue, "10")]
    report = verify_export(jsonl.splitlines())
    assert report.valid, report.findings
    assert report.balances[revenue] == 10

    income = "Income:Pokna:Revenue:" + revenue.replace("acct_", "Acct-")
    assert f"open {income} CREDIT" in beancount
    assert f"  {income}  10 CREDIT" in beancount
    assert f"balance {income}  10 CREDIT" in beancount
    path = tmp_path / "pokna.beancount"
    path.write_text(beancount, encoding="utf-8")
    checked = subprocess.run([str(BEAN_CHECK), str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
