"""The Beancount export is a valid ledger: bean-check accepts it and its balances are the trial balance."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from beancount import loader
from beancount.core import data
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.ledger.errors import InvalidAccount
from pokna.ledger.model import check_currency
from support.driver import export_beancount
from support.game_play import Api, obliging, play
from support.ledger_reads import trial_balance
from support.sessions import unit_of_work
from support.tenant_api import TenantApi

pytest_plugins = ["ledger_fixtures"]
pytestmark = pytest.mark.usefixtures("on_chain_zero")

BEAN_CHECK = Path(sys.executable).with_name("bean-check")


def _books(client: TestClient, tenant_api: TenantApi) -> None:
    """Two deposits, a game between the two wallets (its pot, antes and payouts), a withdrawal: over HTTP,
    all on chain 0."""
    han = tenant_api.wallet(external_id="han")
    greedo = tenant_api.wallet(external_id='gree"do\\')
    assert tenant_api.deposit(han, 1000, reference='wire "7"').status_code == 201
    assert tenant_api.deposit(greedo, 400).status_code == 201
    api = Api(client, tenant_api.api_key)
    assert play([api], api.create_game(han, [greedo], stake=100), obliging)["status"] == "settled"
    assert tenant_api.withdraw(han, 55).status_code == 201


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
    client: TestClient, sessions: sessionmaker[Session], tenant_api: TenantApi, tmp_path: Path
) -> None:
    tenant_id = tenant_api.tenant_id
    _books(client, tenant_api)
    path = _write(sessions, tenant_id, tmp_path / "pokna.beancount")
    checked = subprocess.run([str(BEAN_CHECK), str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    text = path.read_text()
    with unit_of_work(sessions) as session:
        expected = {entry.account_id: entry.balance for entry in trial_balance(session, tenant_id).accounts}
    # The stored balances (two wallets, the pot, the funding account), asserted for bean-check to prove.
    assert text.count(" balance ") == len(expected) == 4
    assert "Assets:Pokna:GamePot:" in text
    assert _by_account_id(_bean_balances(path)) == {account: balance for account, balance in expected.items()}
    assert sum(expected.values()) == 0


def test_bean_check_catches_an_edited_amount_through_the_balance_assertions(
    client: TestClient, sessions: sessionmaker[Session], tenant_api: TenantApi, tmp_path: Path
) -> None:
    _books(client, tenant_api)
    path = _write(sessions, tenant_api.tenant_id, tmp_path / "pokna.beancount")
    text = path.read_text()
    edited = text.replace("  -55 CREDIT", "  -50 CREDIT").replace("  55 CREDIT", "  50 CREDIT")
    assert edited != text
    path.write_text(edited)
    checked = subprocess.run([str(BEAN_CHECK), str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode != 0
    assert "Balance failed" in checked.stdout + checked.stderr


def test_a_partial_export_opens_with_the_balances_before_it(
    client: TestClient, sessions: sessionmaker[Session], tenant_api: TenantApi, tmp_path: Path
) -> None:
    tenant_id = tenant_api.tenant_id
    _books(client, tenant_api)
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


@pytest.mark.parametrize("currency", ["TRUE", "FALSE", "NULL"])
def test_a_currency_beancount_reads_as_a_keyword_is_refused(tenant_api: TenantApi, currency: str) -> None:
    """Beancount has no quoting for a currency: `open ... TRUE` is a syntax error, so one such account would
    break the tenant's whole export for bean-check."""
    answer = tenant_api.post("/v1/accounts", {"currency": currency})
    assert answer.status_code == 422, answer.text
    problem = answer.json()
    assert problem["detail"].startswith("body.currency: "), problem
    assert "Beancount" in problem["detail"], problem
    with pytest.raises(InvalidAccount, match="Beancount"):
        check_currency(currency)
