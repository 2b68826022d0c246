"""The Beancount export is a valid ledger: bean-check accepts it and its balances are the trial balance."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from beancount import loader
from beancount.core import data
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import unit_of_work
from pokna.ledger import (
    AccountTransfer,
    deposit,
    export_beancount,
    house_account,
    open_account,
    post_transfers,
    trial_balance,
    withdraw,
)

pytest_plugins = ["ledger_fixtures"]
pytestmark = pytest.mark.usefixtures("on_chain_zero")

BEAN_CHECK = Path(sys.executable).with_name("bean-check")


def _books(sessions: sessionmaker[Session], tenant_id: str) -> None:
    with unit_of_work(sessions) as session:
        han = open_account(session, tenant_id=tenant_id, kind="player_wallet", external_id="han").id
        greedo = open_account(session, tenant_id=tenant_id, kind="player_wallet", external_id='gree"do\\').id
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="cantina").id
        house = house_account(session, tenant_id).id
        deposit(session, tenant_id=tenant_id, account_id=han, amount=1000, reference='wire "7"')
        deposit(session, tenant_id=tenant_id, account_id=greedo, amount=400)
    with unit_of_work(sessions) as session:
        post_transfers(
            session,
            tenant_id=tenant_id,
            reference="game-1",
            transfers=[
                AccountTransfer("ante", han, pot, 100),
                AccountTransfer("ante", greedo, pot, 100),
                AccountTransfer("payout", pot, han, 190),
                AccountTransfer("payout", pot, house, 10),
            ],
        )
        withdraw(session, tenant_id=tenant_id, account_id=han, amount=55)


def _write(sessions: sessionmaker[Session], tenant_id: str, path: Path, **bounds: int) -> Path:
    with unit_of_work(sessions) as session, path.open("w", encoding="utf-8") as handle:
        handle.writelines(export_beancount(session, tenant_id, **bounds))
    return path


def _bean_balances(path: Path) -> dict[str, Decimal]:
    entries, errors, _options = loader.load_file(str(path))
    assert errors == []
    totals: dict[str, Decimal] = {}
    for entry in entries:
        if isinstance(entry, data.Transaction):
            for posting in entry.postings:
                assert posting.units is not None
                assert posting.units.number is not None
                totals[posting.account] = totals.get(posting.account, Decimal(0)) + posting.units.number
    return totals


def _by_account_id(totals: dict[str, Decimal]) -> dict[str, int]:
    """`Assets:Pokna:PlayerWallet:Acct-<hex>` back to `acct_<hex>`."""
    return {name.rsplit(":", 1)[1].replace("Acct-", "acct_"): int(amount) for name, amount in totals.items()}


def test_bean_check_accepts_the_export_and_its_balances_are_the_trial_balance(
    sessions: sessionmaker[Session], tenant_id: str, tmp_path: Path
) -> None:
    _books(sessions, tenant_id)
    path = _write(sessions, tenant_id, tmp_path / "pokna.beancount")
    checked = subprocess.run([str(BEAN_CHECK), str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    text = path.read_text()
    assert text.count(" balance ") == 5  # the stored balances, asserted for bean-check to prove
    with unit_of_work(sessions) as session:
        expected = {entry.account_id: entry.balance for entry in trial_balance(session, tenant_id).accounts}
    assert _by_account_id(_bean_balances(path)) == {account: balance for account, balance in expected.items()}
    assert sum(expected.values()) == 0


def test_bean_check_catches_an_edited_amount_through_the_balance_assertions(
    sessions: sessionmaker[Session], tenant_id: str, tmp_path: Path
) -> None:
    _books(sessions, tenant_id)
    path = _write(sessions, tenant_id, tmp_path / "pokna.beancount")
    text = path.read_text()
    edited = text.replace("  -55 CREDIT", "  -50 CREDIT").replace("  55 CREDIT", "  50 CREDIT")
    assert edited != text
    path.write_text(edited)
    checked = subprocess.run([str(BEAN_CHECK), str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode != 0
    assert "Balance failed" in checked.stdout + checked.stderr


def test_a_partial_export_opens_with_the_balances_before_it(
    sessions: sessionmaker[Session], tenant_id: str, tmp_path: Path
) -> None:
    _books(sessions, tenant_id)
    path = _write(sessions, tenant_id, tmp_path / "tail.beancount", chain=0, from_seq=4)
    checked = subprocess.run([str(BEAN_CHECK), str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "opening balances before seq 4" in path.read_text()
    with unit_of_work(sessions) as session:
        expected = {entry.account_id: entry.balance for entry in trial_balance(session, tenant_id).accounts}
    totals = _by_account_id(_bean_balances(path))
    assert {account: totals.get(account, 0) for account in expected} == expected
    head = _write(sessions, tenant_id, tmp_path / "head.beancount", chain=0, to_seq=2)
    assert subprocess.run([str(BEAN_CHECK), str(head)], capture_output=True, check=False).returncode == 0
    assert " balance " not in head.read_text()  # not up to the head: nothing stored to assert
