"""One funding sub-account per chain: a deposit or withdrawal posts against the funding account of the chain
it posts on, so one tenant's deposits on different chains share no row lock; the tenant's funding balance is
the sum of its sub-accounts, and the books still balance, reconcile, export and verify."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from beancount import loader
from beancount.core import data
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from pokna.ledger import AccountKind, system_external_id, verify_export
from pokna.ledger.export_aio import beancount_account
from pokna_verify.ledger.chain import LEDGER_CHAINS, chain_for
from support.driver import export_beancount, export_jsonl, funding_account, open_account, reconcile
from support.ledger_reads import (
    house_account,
    revenue_account,
    system_accounts,
    system_balance,
    trial_balance,
)
from support.sessions import unit_of_work
from support.tenant_api import TenantApi

pytest_plugins = ["ledger_fixtures"]

BEAN_CHECK = Path(sys.executable).with_name("bean-check")
FUNDING = AccountKind.EXTERNAL_FUNDING
_FUNDING_LEGS = text(
    "SELECT t.chain, other.account_id FROM posting AS mine "
    "JOIN journal_transaction AS t ON t.id = mine.transaction_id AND t.tenant_id = mine.tenant_id "
    "JOIN posting AS other ON other.transaction_id = t.id AND other.tenant_id = t.tenant_id "
    "AND other.account_id <> mine.account_id "
    "WHERE mine.tenant_id = :tenant_id AND mine.account_id = :wallet"
)


def _wallets_on_distinct_chains(sessions: sessionmaker[Session], tenant_id: str, chains: int) -> list[str]:
    """Wallets whose deposits go on `chains` distinct chains."""
    found: dict[int, str] = {}
    with unit_of_work(sessions) as session:
        while len(found) < chains:
            wallet = open_account(session, tenant_id=tenant_id, kind="player_wallet").id
            found.setdefault(chain_for(wallet), wallet)
    return list(found.values())


def test_the_external_ids_are_the_currency_on_chain_zero_and_name_the_chain_elsewhere() -> None:
    assert system_external_id("CREDIT") == system_external_id("CREDIT", 0) == "CREDIT"
    assert system_external_id("CREDIT", 3) == "CREDIT/chain3"
    assert system_external_id("EUR", LEDGER_CHAINS - 1) == f"EUR/chain{LEDGER_CHAINS - 1}"
    for chain in (-1, LEDGER_CHAINS, True):
        with pytest.raises(ValueError, match="chain"):
            system_external_id("CREDIT", chain)


def test_deposits_on_several_chains_use_distinct_funding_sub_accounts_whose_sum_is_minus_the_money_in(
    sessions: sessionmaker[Session], tenant_api: TenantApi, tmp_path: Path
) -> None:
    tenant_id = tenant_api.tenant_id
    wallets = _wallets_on_distinct_chains(sessions, tenant_id, 4)
    for index, wallet in enumerate(wallets):
        assert tenant_api.deposit(wallet, 100 + index).status_code == 201
    assert tenant_api.withdraw(wallets[1], 30).status_code == 201
    money_in = sum(100 + index for index in range(len(wallets))) - 30

    with unit_of_work(sessions) as session:
        funding = {
            chain_for(wallet): funding_account(session, tenant_id, chain=chain_for(wallet))
            for wallet in wallets
        }
        assert len({account.id for account in funding.values()}) == len(wallets)
        for chain, account in funding.items():
            assert account.kind == FUNDING.value
            assert account.external_id == system_external_id("CREDIT", chain)
        expected = {chain_for(wallet): -(100 + index) for index, wallet in enumerate(wallets)}
        expected[chain_for(wallets[1])] += 30
        assert {chain: account.balance for chain, account in funding.items()} == expected
        # Each posting went on its wallet's chain, against that chain's sub-account.
        for wallet in wallets:
            legs = session.execute(_FUNDING_LEGS, {"tenant_id": tenant_id, "wallet": wallet}).all()
            assert {(row.chain, row.account_id) for row in legs} == {
                (chain_for(wallet), funding[chain_for(wallet)].id)
            }
        # The tenant's funding balance: the sum of its sub-accounts (and no others of its kind).
        assert {account.id for account in system_accounts(session, tenant_id, FUNDING)} == {
            account.id for account in funding.values()
        }
        assert system_balance(session, tenant_id, FUNDING) == -money_in
        assert system_balance(session, tenant_id, FUNDING, "EUR") == 0

        trial = trial_balance(session, tenant_id)
        assert trial.total == 0
        listed = {entry.account_id: entry.balance for entry in trial.accounts}
        assert sum(listed[account.id] for account in funding.values()) == -money_in
        assert sum(listed[wallet] for wallet in wallets) == money_in

        report = reconcile(session, tenant_id, check_chain=True)
        assert report.ok, report
        audit = verify_export(export_jsonl(session, tenant_id))
        assert audit.findings == [], audit

        path = tmp_path / "books.beancount"
        with path.open("w", encoding="utf-8") as handle:
            handle.writelines(export_beancount(session, tenant_id))
    checked = subprocess.run([str(BEAN_CHECK), str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    entries, errors, _options = loader.load_file(str(path))
    assert errors == []
    names = {beancount_account(FUNDING.value, account.id) for account in funding.values()}
    assert all(name.startswith("Equity:Pokna:ExternalFunding:") for name in names)
    total = sum(
        posting.units.number
        for entry in entries
        if isinstance(entry, data.Transaction)
        for posting in entry.postings
        if posting.account in names and posting.units is not None and posting.units.number is not None
    )
    assert total == -money_in


def test_chain_zero_keeps_the_account_of_before_chains(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    """Chain 0's sub-account is the funding (revenue) account as it always was: the currency its external id,
    and the one `funding_account` answers without a chain."""
    with unit_of_work(sessions) as session:
        before = funding_account(session, tenant_id)
        assert before.external_id == "CREDIT"
        assert funding_account(session, tenant_id, chain=0).id == before.id
        assert revenue_account(session, tenant_id).external_id == "CREDIT"
        assert revenue_account(session, tenant_id, chain=5).external_id == "CREDIT/chain5"
        assert revenue_account(session, tenant_id, chain=5).id != revenue_account(session, tenant_id).id
        assert house_account(session, tenant_id).external_id == "CREDIT"
