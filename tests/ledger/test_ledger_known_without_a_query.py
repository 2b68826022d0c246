"""What a deposit knows without a query (pokna.ledger.account_cache): the tenant's funding account once a
committed transaction has found it, and a wallet's balance while its transaction holds it locked. Neither
outlives a rollback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, event
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import unit_of_work
from pokna.ledger import (
    AccountKind,
    balance_of,
    chain_for,
    deposit,
    funding_account,
    open_account,
    system_external_id,
)
from pokna.ledger.account_cache import system_account_id

pytest_plugins = ["ledger_fixtures"]
FUNDING = AccountKind.EXTERNAL_FUNDING.value


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    sent: list[str] = []

    def record(_connection: object, _cursor: object, statement: str, *_: object) -> None:
        sent.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)


def _wallet(sessions: sessionmaker[Session], tenant_id: str) -> str:
    with unit_of_work(sessions) as session:
        return open_account(session, tenant_id=tenant_id, kind=AccountKind.PLAYER_WALLET).id


def _funding_of(wallet: str) -> str:
    """The external id of the funding sub-account a wallet's deposits post against (its chain's)."""
    return system_external_id("CREDIT", chain_for(wallet))


def test_the_funding_account_is_remembered_only_once_committed(
    sessions: sessionmaker[Session], engine: Engine, tenant_id: str
) -> None:
    wallet = _wallet(sessions, tenant_id)
    with sessions() as session:  # the first deposit creates the funding account, then rolls back
        deposit(session, tenant_id=tenant_id, account_id=wallet, amount=5)
        deposit(session, tenant_id=tenant_id, account_id=wallet, amount=5)  # finds the uncommitted one
        session.rollback()
    assert system_account_id(sessions(), tenant_id, FUNDING, _funding_of(wallet)) is None

    with unit_of_work(sessions) as session:
        deposit(session, tenant_id=tenant_id, account_id=wallet, amount=5)
        assert (
            system_account_id(session, tenant_id, FUNDING, _funding_of(wallet)) is None
        )  # not before the commit
    with unit_of_work(sessions) as session:
        funding = funding_account(session, tenant_id, chain=chain_for(wallet)).id
        assert system_account_id(session, tenant_id, FUNDING, _funding_of(wallet)) == funding

    with statements(engine) as sent, unit_of_work(sessions) as session:
        deposit(session, tenant_id=tenant_id, account_id=wallet, amount=5)
    assert not [text for text in sent if "external_id = " in text], sent  # no query for the funding account
    with unit_of_work(sessions) as session:
        assert balance_of(session, wallet) == 10
        assert balance_of(session, funding) == -10


def test_a_posted_balance_is_known_until_the_transaction_ends(
    sessions: sessionmaker[Session], engine: Engine, tenant_id: str
) -> None:
    wallet = _wallet(sessions, tenant_id)
    with unit_of_work(sessions) as session:
        deposit(session, tenant_id=tenant_id, account_id=wallet, amount=7)
    with sessions() as session:
        deposit(session, tenant_id=tenant_id, account_id=wallet, amount=3)
        with statements(engine) as sent:
            assert balance_of(session, wallet) == 10
        assert sent == []  # held locked by this transaction: no query
        session.rollback()
        with statements(engine) as sent:
            assert balance_of(session, wallet) == 7  # after the rollback, read again
        assert [text for text in sent if "balance" in text] != []
    with sessions() as session:
        deposit(session, tenant_id=tenant_id, account_id=wallet, amount=3)
        session.commit()
        with statements(engine) as sent:
            assert balance_of(session, wallet) == 10
        assert [text for text in sent if "balance" in text] != []  # the commit ended the lock: read again


def test_a_session_closed_with_its_transaction_open_forgets_it_all(
    sessions: sessionmaker[Session], engine: Engine, tenant_id: str
) -> None:
    """Closing ends the transaction without `after_soft_rollback`: a funding account created in it must not
    be remembered by the next commit of the same session, nor a balance held in it."""
    wallet = _wallet(sessions, tenant_id)
    session = sessions()
    deposit(session, tenant_id=tenant_id, account_id=wallet, amount=5)  # creates the funding account
    session.close()  # rolled back by the close
    with session.begin():  # the same session object, a new transaction
        with statements(engine) as sent:
            assert balance_of(session, wallet) == 0
        assert [text for text in sent if "balance" in text] != []
    assert system_account_id(sessions(), tenant_id, FUNDING, _funding_of(wallet)) is None
    session.close()
