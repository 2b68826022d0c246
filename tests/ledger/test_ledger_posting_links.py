"""What the posting's foreign keys refused is still refused without them (migration 0020_posting_checks):
a posting of no transaction of its tenant, an account with postings deleted, the account table truncated;
and the account guard's WHEN still sends a client's balance change to the guard, inside a function too.
docs/ledger.md, "What the database checks per posting, and how".
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from support.ledger_reads import house_account
from support.sessions import unit_of_work
from support.tenant_api import TenantApi

pytest_plugins = ["ledger_fixtures"]

# The posting's created_at is its transaction's when there is one (else any: the trigger refuses it anyway).
POSTING = (
    "INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency, created_at) "
    "VALUES (:id, :tenant, CAST(:txn AS text), 0, :account, 5, 'CREDIT', coalesce((SELECT created_at "
    "FROM journal_transaction WHERE tenant_id = :tenant AND id = CAST(:txn AS text)), now()))"
)


@pytest.fixture
def posted(sessions: sessionmaker[Session], tenant_api: TenantApi) -> dict[str, str]:
    """A tenant's wallet with one deposit (a posting names it), its house (none names it) and the deposit."""
    wallet = tenant_api.wallet()
    answer = tenant_api.deposit(wallet, 100)
    assert answer.status_code == 201, answer.text
    with unit_of_work(sessions) as session:
        return {
            "tenant": tenant_api.tenant_id,
            "wallet": wallet,
            "house": house_account(session, tenant_api.tenant_id).id,
            "txn": answer.json()["id"],
        }


def _refused(engine: Engine, statement: str, params: dict[str, object], match: str) -> None:
    with pytest.raises(DBAPIError, match=match), engine.begin() as connection:
        connection.execute(text(statement), params)


def _posting(tenant: str, txn: str, account: str) -> dict[str, object]:
    return {"id": f"pst_{uuid.uuid4().hex}", "tenant": tenant, "txn": txn, "account": account}


def test_a_posting_of_no_transaction_is_refused(engine: Engine, posted: dict[str, str]) -> None:
    """What the foreign key to journal_transaction refused: the trigger finds no transaction."""
    _refused(engine, POSTING, _posting(posted["tenant"], "txn_none", posted["house"]), "names no transaction")


def test_a_posting_of_another_tenants_transaction_is_refused(
    engine: Engine, posted: dict[str, str], make_tenant: object, sessions: sessionmaker[Session]
) -> None:
    """The transaction is looked for under the posting's tenant: another tenant's id is no transaction."""
    stranger = make_tenant()  # type: ignore[operator]
    with unit_of_work(sessions) as session:
        foreign = house_account(session, stranger).id
    _refused(engine, POSTING, _posting(stranger, posted["txn"], foreign), "names no transaction")


def test_an_account_with_postings_is_never_deleted(engine: Engine, posted: dict[str, str]) -> None:
    """What the foreign key from posting to account refused; an account no posting names may still go."""
    _refused(engine, "DELETE FROM account WHERE id = :id", {"id": posted["wallet"]}, "never deleted")
    with engine.begin() as connection:
        gone = connection.execute(
            text("DELETE FROM account WHERE id = :id RETURNING id"), {"id": posted["house"]}
        ).scalar_one()
    assert gone == posted["house"]
    with engine.connect() as connection:
        left = connection.execute(
            text("SELECT count(*) FROM account WHERE id = :id"), {"id": posted["wallet"]}
        ).scalar_one()
    assert left == 1


def test_the_account_table_is_never_truncated(engine: Engine, posted: dict[str, str]) -> None:
    """With the foreign key, TRUNCATE account CASCADE reached posting, whose own trigger refused it."""
    _refused(engine, "TRUNCATE account CASCADE", {}, "never truncated")
    _refused(engine, "TRUNCATE tenant CASCADE", {}, "never truncated|append-only")


def test_a_balance_set_from_a_function_is_refused(engine: Engine, posted: dict[str, str]) -> None:
    """The guard's WHEN lets through trigger depth 1 only (the posting trigger's UPDATE): a function a client
    calls runs at depth 0, as its statements did before."""
    with engine.begin() as connection:
        connection.execute(
            text(
                "CREATE FUNCTION pg_temp.set_balance(p_id text) RETURNS void LANGUAGE sql AS "
                "$$ UPDATE account SET balance = balance + 1 WHERE id = p_id $$"
            )
        )
        with pytest.raises(DBAPIError, match="only by posting"), connection.begin_nested():
            connection.execute(text("SELECT pg_temp.set_balance(:id)"), {"id": posted["wallet"]})
