"""post_transfers(expected_balances=...): post only on the balances the caller decided on, or say which are held."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import unit_of_work
from pokna.db.models.ledger import JournalTransaction
from pokna.ledger import (
    AccountNotFound,
    AccountTransfer,
    AmountOutOfRange,
    InsufficientFunds,
    balance_of,
    deposit,
    funding_account,
    house_account,
    open_account,
    post_transfers,
)
from pokna.ledger.errors import BalancesChanged

pytest_plugins = ["ledger_fixtures"]


def _funded(sessions: sessionmaker[Session], tenant_id: str, name: str, amount: int) -> str:
    with unit_of_work(sessions) as session:
        wallet = open_account(session, tenant_id=tenant_id, kind="player_wallet", external_id=name).id
        deposit(session, tenant_id=tenant_id, account_id=wallet, amount=amount)
    return wallet


def _seqs(session: Session, tenant_id: str) -> list[tuple[int, int]]:
    """(chain, seq) of every transaction of the tenant."""
    return [
        (int(chain), int(seq))
        for chain, seq in session.execute(
            select(JournalTransaction.chain, JournalTransaction.seq)
            .where(JournalTransaction.tenant_id == tenant_id)
            .order_by(JournalTransaction.chain, JournalTransaction.seq)
        )
    ]


def test_matching_balances_post(sessions: sessionmaker[Session], tenant_id: str) -> None:
    payer = _funded(sessions, tenant_id, "payer", 40)
    bystander = _funded(sessions, tenant_id, "bystander", 7)
    with unit_of_work(sessions) as session:
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="g").id
        # Transfers with no reference go on chain 0 (the deposits went on their wallets' chains).
        on_chain_0 = sum(chain == 0 for chain, _ in _seqs(session, tenant_id))
        posted = post_transfers(
            session,
            tenant_id=tenant_id,
            transfers=[AccountTransfer("ante", payer, pot, 10)],
            expected_balances={payer: 40, bystander: 7, pot: 0},
        )
        assert [(transaction.chain, transaction.seq) for transaction in posted] == [(0, on_chain_0 + 1)]
    with unit_of_work(sessions) as session:
        assert (balance_of(session, payer), balance_of(session, pot)) == (30, 10)


def test_a_changed_balance_posts_nothing_and_names_the_held_balances(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    payer = _funded(sessions, tenant_id, "payer", 40)
    bystander = _funded(sessions, tenant_id, "bystander", 7)
    with unit_of_work(sessions) as session:
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="g").id
    with unit_of_work(sessions) as session:
        deposit(session, tenant_id=tenant_id, account_id=bystander, amount=5)  # after the caller's read
    with unit_of_work(sessions) as session:
        before = _seqs(session, tenant_id)
        with pytest.raises(BalancesChanged) as raised:
            post_transfers(
                session,
                tenant_id=tenant_id,
                transfers=[AccountTransfer("ante", payer, pot, 10)],
                expected_balances={payer: 40, bystander: 7},
            )
        assert raised.value.balances == {payer: 40, bystander: 12}
        assert raised.value.code == "balances_changed"
        assert raised.value.status == 409
        assert raised.value.extensions["balances"] == {payer: 40, bystander: 12}
        assert _seqs(session, tenant_id) == before
        # Decided again on the held balances, in the same transaction: now it posts.
        post_transfers(
            session,
            tenant_id=tenant_id,
            transfers=[AccountTransfer("ante", payer, pot, 10)],
            expected_balances=raised.value.balances,
        )
    with unit_of_work(sessions) as session:
        assert (balance_of(session, payer), balance_of(session, bystander), balance_of(session, pot)) == (
            30,
            12,
            10,
        )
        on_chain_0 = sum(chain == 0 for chain, _ in before)
        assert _seqs(session, tenant_id) == sorted([*before, (0, on_chain_0 + 1)])


def test_a_changed_balance_is_reported_before_insufficient_funds(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    payer = _funded(sessions, tenant_id, "payer", 3)
    with unit_of_work(sessions) as session:
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="g").id
        with pytest.raises(BalancesChanged) as raised:
            post_transfers(
                session,
                tenant_id=tenant_id,
                transfers=[AccountTransfer("ante", payer, pot, 5)],
                expected_balances={payer: 5},
            )
        assert raised.value.balances == {payer: 3}
        with pytest.raises(InsufficientFunds):
            post_transfers(
                session,
                tenant_id=tenant_id,
                transfers=[AccountTransfer("ante", payer, pot, 5)],
                expected_balances={payer: 3},
            )


def test_an_expected_account_must_be_the_tenants(sessions: sessionmaker[Session], tenant_id: str) -> None:
    payer = _funded(sessions, tenant_id, "payer", 10)
    with unit_of_work(sessions) as session:
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="g").id
        with pytest.raises(AccountNotFound) as raised:
            post_transfers(
                session,
                tenant_id=tenant_id,
                transfers=[AccountTransfer("ante", payer, pot, 5)],
                expected_balances={payer: 10, "acct_nope": 0},
            )
        assert raised.value.extensions["account_id"] == "acct_nope"


def test_a_balance_beyond_the_bound_is_refused_before_anything_is_written(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    """1001 moves of 10^15 would take the funding account past -10^18: all refused, none written."""
    with unit_of_work(sessions) as session:
        funding = funding_account(session, tenant_id).id
        house = house_account(session, tenant_id).id
        with pytest.raises(AmountOutOfRange) as raised:
            post_transfers(
                session,
                tenant_id=tenant_id,
                transfers=[AccountTransfer("adjustment", funding, house, 10**15)] * 1001,
            )
        assert raised.value.extensions["account_id"] == funding
        assert _seqs(session, tenant_id) == []
        posted = post_transfers(
            session,
            tenant_id=tenant_id,
            transfers=[AccountTransfer("adjustment", funding, house, 10**15)] * 1000,
        )
        assert len(posted) == 1000
    with unit_of_work(sessions) as session:
        assert balance_of(session, funding) == -(10**18)
