"""A statement of several postings, as a client's raw SQL can write it: each balance moves by exactly the sum
of its legs, a held wallet's debit is refused even when a credit of the same statement would cover it, and
each of the posting trigger's refusals holds for one bad posting among good ones, on PostgreSQL and on
Citus (where the statement goes through the coordinator to the tenant's shard).

`ledger_post()` inserts one transaction's postings per statement, so a statement of several transactions,
or of several tenants, comes only from a client. These hold whatever applies the balances: a trigger a
row at a time (today's `trg_posting_apply`) or once per statement over its rows, an alternative measured
and not taken (bench/README.md, "Issue 44/45: one balance UPDATE per posting statement"), which would have
to keep each of them: summed legs hide a debit behind a credit. docs/ledger.md, "What the database checks
per posting, and how".
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Sequence

import pytest
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from support.driver import funding_account
from support.ledger_reads import house_account
from support.sessions import unit_of_work
from support.tenant_api import TenantApi

pytest_plugins = ["ledger_fixtures"]
pytestmark = pytest.mark.citus

GENESIS = "0" * 64
# (tenant, transaction, leg, account, amount, currency) of one posting.
Leg = tuple[str, str, int, str, int, str]


def _new_id() -> str:
    return f"txn_{uuid.uuid4().hex}"


def _transaction(
    connection: Connection, transaction_id: str, tenant_id: str, seq: int, prev_hash: str, count: int
) -> None:
    """A journal transaction of chain 0 with plain SQL (its hash arbitrary), its postings left to the caller."""
    connection.execute(
        text(
            "INSERT INTO journal_transaction (id, tenant_id, seq, kind, reference, metadata, posting_count, "
            "prev_hash, hash, created_at) VALUES (:id, :tenant, :seq, 'adjustment', NULL, '{}', :count, :prev, "
            ":hash, CURRENT_TIMESTAMP)"
        ),
        {
            "id": transaction_id,
            "tenant": tenant_id,
            "seq": seq,
            "count": count,
            "prev": prev_hash,
            "hash": uuid.uuid4().hex * 2,
        },
    )


def _write(
    engine: Engine,
    books: dict[str, str],
    transaction_id: str,
    count: int,
    legs: Sequence[Leg],
    early: Collection[int] = (),
) -> None:
    """The tenant's next transaction of chain 0, declaring `count` postings, and `legs` in one statement."""
    with engine.begin() as connection:
        _transaction(connection, transaction_id, books["tenant"], 2, books["hash"], count)
        _postings(connection, legs, early)


def _postings(connection: Connection, legs: Sequence[Leg], early: Collection[int] = ()) -> None:
    """Every leg in ONE `INSERT ... VALUES` statement, at its transaction's moment (the transactions are
    written at CURRENT_TIMESTAMP, in the same database transaction) but the legs `early` names, a second
    before it."""
    rows = ", ".join(
        f"(:id{n}, :tenant{n}, :txn{n}, :leg{n}, :account{n}, :amount{n}, :currency{n}, CURRENT_TIMESTAMP"
        + (" - interval '1 second')" if n in early else ")")
        for n in range(len(legs))
    )
    params: dict[str, object] = {}
    for n, (tenant_id, transaction_id, leg, account_id, amount, currency) in enumerate(legs):
        params |= {
            f"id{n}": f"pst_{uuid.uuid4().hex}",
            f"tenant{n}": tenant_id,
            f"txn{n}": transaction_id,
            f"leg{n}": leg,
            f"account{n}": account_id,
            f"amount{n}": amount,
            f"currency{n}": currency,
        }
    connection.execute(
        text(
            "INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency, created_at) "
            f"VALUES {rows}"
        ),
        params,
    )


def _balances(engine: Engine, *account_ids: str) -> list[int]:
    with engine.connect() as connection:
        found: dict[str, int] = dict(
            connection.execute(
                text("SELECT id, balance FROM account WHERE id = ANY(:ids)"), {"ids": list(account_ids)}
            ).all()
        )
    return [found[account_id] for account_id in account_ids]


@pytest.fixture
def books(sessions: sessionmaker[Session], tenant_api: TenantApi, on_chain_zero: None) -> dict[str, str]:
    """A tenant with a wallet funded over HTTP (balance 100), a house and a funding account (-100), chain 0's
    head at seq 1."""
    wallet = tenant_api.wallet()
    answer = tenant_api.deposit(wallet, 100)
    assert answer.status_code == 201, answer.text
    assert (answer.json()["chain"], answer.json()["seq"]) == (0, 1)
    with unit_of_work(sessions) as session:
        return {
            "tenant": tenant_api.tenant_id,
            "wallet": wallet,
            "house": house_account(session, tenant_api.tenant_id).id,
            "funding": funding_account(session, tenant_api.tenant_id).id,
            "hash": answer.json()["hash"],
        }


def test_one_statement_of_four_legs_moves_each_balance_by_the_sum_of_its_legs(
    engine: Engine, books: dict[str, str]
) -> None:
    tenant, wallet, house, funding = books["tenant"], books["wallet"], books["house"], books["funding"]
    txn = _new_id()
    legs = [
        (tenant, txn, 0, wallet, -10, "CREDIT"),
        (tenant, txn, 1, house, 3, "CREDIT"),
        (tenant, txn, 2, wallet, 2, "CREDIT"),
        (tenant, txn, 3, funding, 5, "CREDIT"),
    ]
    _write(engine, books, txn, 4, legs)
    assert _balances(engine, wallet, house, funding) == [92, 3, -95]


def test_one_statement_of_two_tenants_transactions_moves_each_tenants_balances(
    engine: Engine, books: dict[str, str], make_tenant: Callable[[], str], sessions: sessionmaker[Session]
) -> None:
    """A client's raw INSERT may name several tenants (on Citus, shards of one worker or of two)."""
    other = make_tenant()
    with unit_of_work(sessions) as session:
        other_house, other_funding = house_account(session, other).id, funding_account(session, other).id
    txn, other_txn = _new_id(), _new_id()
    with engine.begin() as connection:
        _transaction(connection, txn, books["tenant"], 2, books["hash"], 2)
        _transaction(connection, other_txn, other, 1, GENESIS, 2)
        _postings(
            connection,
            [
                (books["tenant"], txn, 0, books["house"], 7, "CREDIT"),
                (other, other_txn, 0, other_house, 4, "CREDIT"),
                (books["tenant"], txn, 1, books["funding"], -7, "CREDIT"),
                (other, other_txn, 1, other_funding, -4, "CREDIT"),
            ],
        )
    assert _balances(engine, books["house"], books["funding"], other_house, other_funding) == [7, -107, 4, -4]


def _hold(engine: Engine, wallet: str) -> None:
    """What a waiting beacon roll does to its seated wallets (beacon_roll_write()'s accept), as a client's UPDATE."""
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE account SET roll_hold_game_id = 'gam_waiting' WHERE id = :id"), {"id": wallet}
        )


def test_a_held_wallet_debited_and_credited_in_one_statement_is_refused(
    engine: Engine, books: dict[str, str]
) -> None:
    """The hold refuses any money leaving the wallet: a debit the same statement's credit covers as well."""
    tenant, wallet, house = books["tenant"], books["wallet"], books["house"]
    _hold(engine, wallet)
    txn = _new_id()
    legs = [
        (tenant, txn, 0, wallet, -5, "CREDIT"),
        (tenant, txn, 1, wallet, 6, "CREDIT"),
        (tenant, txn, 2, house, -1, "CREDIT"),
    ]
    with pytest.raises(DBAPIError, match="is held by game gam_waiting") as refused:
        _write(engine, books, txn, 3, legs)
    assert getattr(refused.value.orig, "sqlstate", None) == "PK423"
    assert _balances(engine, wallet, house) == [100, 0]
    # The control: money may still come in.
    txn = _new_id()
    _write(
        engine, books, txn, 2, [(tenant, txn, 0, wallet, 6, "CREDIT"), (tenant, txn, 1, house, -6, "CREDIT")]
    )
    assert _balances(engine, wallet, house) == [106, -6]


@pytest.mark.parametrize(
    ("fault", "refusal"),
    [
        ("no transaction", "names no transaction txn_none of its tenant"),
        ("leg beyond the count", "declares 3 postings; leg 3 refused"),
        ("another currency", "names account .* of another tenant or currency"),
        ("another moment", "posting pst_\\w+ is created at .*, its transaction txn_\\w+ at "),
    ],
)
def test_one_bad_posting_among_good_ones_refuses_the_statement(
    engine: Engine, books: dict[str, str], fault: str, refusal: str
) -> None:
    tenant, wallet, house, funding = books["tenant"], books["wallet"], books["house"], books["funding"]
    txn = _new_id()
    bad: Leg = {
        "no transaction": (tenant, "txn_none", 1, house, 2, "CREDIT"),
        "leg beyond the count": (tenant, txn, 3, house, 2, "CREDIT"),
        "another currency": (tenant, txn, 1, house, 2, "PEGGAT"),
        "another moment": (tenant, txn, 1, house, 2, "CREDIT"),  # written a second before its transaction
    }[fault]
    legs = [(tenant, txn, 0, wallet, -3, "CREDIT"), bad, (tenant, txn, 2, funding, 1, "CREDIT")]
    early = {1} if fault == "another moment" else set()
    with pytest.raises(DBAPIError, match=refusal) as refused:
        _write(engine, books, txn, 3, legs, early)
    assert getattr(refused.value.orig, "sqlstate", None) == "23000"
    assert _balances(engine, wallet, house, funding) == [100, 0, -100]
