"""The database itself refuses to break the books: raw SQL that bypasses pokna.ledger is rejected.

PostgreSQL's triggers and constraints refuse everything here; reconcile() reports what gets past a table
owner who disables them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

import pokna.cli.ledger  # noqa: F401  (registers `ledger`)
from pokna.cli.app import app
from pokna.settings import get_settings
from pokna_verify.crypto.signing import generate_signing_key
from pokna_verify.ledger import findings
from support.driver import funding_account, reconcile, take_checkpoint
from support.ledger_reads import house_account
from support.sessions import unit_of_work
from support.tenant_api import TenantApi

pytest_plugins = ["ledger_fixtures"]

GENESIS = "0" * 64


def _fake_hash() -> str:
    return uuid.uuid4().hex * 2


def _raw_transaction(
    connection: Connection,
    tenant_id: str,
    seq: int,
    prev_hash: str,
    legs: Sequence[tuple[str, int, str]],
    *,
    posting_count: int | None = None,
) -> tuple[str, str]:
    """Insert a journal transaction and its postings with plain SQL (the hash is arbitrary here)."""
    transaction_id = f"txn_{uuid.uuid4().hex}"
    hash_ = _fake_hash()
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
            "count": len(legs) if posting_count is None else posting_count,
            "prev": prev_hash,
            "hash": hash_,
        },
    )
    for leg, (account_id, amount, currency) in enumerate(legs):
        _raw_posting(connection, transaction_id, leg, account_id, amount, currency)
    return transaction_id, hash_


def _raw_posting(
    connection: Connection,
    transaction_id: str,
    leg: int,
    account_id: str,
    amount: int,
    currency: str = "CREDIT",
) -> None:
    connection.execute(
        text(
            "INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency, created_at) "
            "SELECT :id, tenant_id, id, :leg, :account, :amount, :currency, created_at "
            "FROM journal_transaction WHERE id = :txn"
        ),
        {
            "id": f"pst_{uuid.uuid4().hex}",
            "txn": transaction_id,
            "leg": leg,
            "account": account_id,
            "amount": amount,
            "currency": currency,
        },
    )


@pytest.fixture
def books(sessions: sessionmaker[Session], tenant_api: TenantApi, on_chain_zero: None) -> dict[str, str]:
    """A tenant with a wallet funded over HTTP (balance 100), a house and a funding account, chain 0's head at
    seq 1 (on chain 0, where the raw rows below go)."""
    tenant_id = tenant_api.tenant_id
    wallet = tenant_api.wallet()
    answer = tenant_api.deposit(wallet, 100)
    assert answer.status_code == 201, answer.text
    posted = answer.json()
    assert (posted["chain"], posted["seq"]) == (0, 1)
    with unit_of_work(sessions) as session:
        return {
            "tenant": tenant_id,
            "wallet": wallet,
            "house": house_account(session, tenant_id).id,
            "funding": funding_account(session, tenant_id).id,
            "txn": posted["id"],
            "hash": posted["hash"],
        }


def _refused(
    engine: Engine, statement: str, params: dict[str, object] | None = None, match: str = "ledger"
) -> None:
    with pytest.raises(DBAPIError, match=match), engine.begin() as connection:
        connection.execute(text(statement), params or {})


def test_a_balanced_raw_transaction_is_accepted_and_applied(engine: Engine, books: dict[str, str]) -> None:
    """The control: the guards below refuse the violation, not raw SQL as such."""
    with engine.begin() as connection:
        _raw_transaction(
            connection,
            books["tenant"],
            2,
            books["hash"],
            [(books["house"], 7, "CREDIT"), (books["funding"], -7, "CREDIT")],
        )
    with engine.connect() as connection:
        balances: dict[str, int] = dict(connection.execute(text("SELECT id, balance FROM account")).all())
    assert balances[books["house"]] == 7
    assert balances[books["funding"]] == -107


def test_postgresql_refuses_to_commit_an_unbalanced_transaction(
    engine: Engine, books: dict[str, str]
) -> None:
    with pytest.raises(IntegrityError, match="does not balance"), engine.begin() as connection:
        _raw_transaction(
            connection,
            books["tenant"],
            2,
            books["hash"],
            [(books["house"], 10, "CREDIT"), (books["funding"], -9, "CREDIT")],
        )


def test_postgresql_refuses_to_commit_a_transaction_missing_postings(
    engine: Engine, books: dict[str, str]
) -> None:
    with pytest.raises(IntegrityError, match="has 1 postings but declares 2"), engine.begin() as connection:
        _raw_transaction(
            connection, books["tenant"], 2, books["hash"], [(books["house"], 10, "CREDIT")], posting_count=2
        )
    with pytest.raises(IntegrityError, match="has 0 postings"), engine.begin() as connection:
        _raw_transaction(connection, books["tenant"], 2, books["hash"], [], posting_count=2)


def test_fewer_than_two_postings_cannot_even_be_declared(engine: Engine, books: dict[str, str]) -> None:
    with pytest.raises(IntegrityError, match="at_least_two_postings"), engine.begin() as connection:
        _raw_transaction(
            connection,
            books["tenant"],
            2,
            books["hash"],
            [(books["house"], 0 + 1, "CREDIT")],
            posting_count=1,
        )


def test_no_posting_can_be_added_to_a_recorded_transaction(engine: Engine, books: dict[str, str]) -> None:
    with pytest.raises(DBAPIError, match=r"declares|UNIQUE|duplicate"), engine.begin() as connection:
        _raw_posting(connection, books["txn"], 2, books["house"], 5)
    with pytest.raises(DBAPIError, match=r"UNIQUE|duplicate"), engine.begin() as connection:
        _raw_posting(connection, books["txn"], 1, books["house"], 5)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE posting SET amount = amount * 2",
        "DELETE FROM posting",
        "UPDATE journal_transaction SET reference = 'rewritten'",
        "DELETE FROM journal_transaction",
    ],
)
def test_postings_and_transactions_are_append_only(
    engine: Engine, books: dict[str, str], statement: str
) -> None:
    _refused(engine, statement, match="append-only")


def test_checkpoints_are_append_only(
    engine: Engine, sessions: sessionmaker[Session], books: dict[str, str]
) -> None:
    with unit_of_work(sessions) as session:
        take_checkpoint(session, books["tenant"], generate_signing_key())
    _refused(engine, "UPDATE ledger_checkpoint SET seq = 99", match="append-only")
    _refused(engine, "DELETE FROM ledger_checkpoint", match="append-only")


@pytest.mark.parametrize("table", ["posting", "journal_transaction", "ledger_checkpoint"])
def test_postgresql_refuses_truncate(engine: Engine, books: dict[str, str], table: str) -> None:
    _refused(engine, f"TRUNCATE {table} CASCADE", match="append-only")


def test_a_balance_changes_only_by_posting(engine: Engine, books: dict[str, str]) -> None:
    _refused(
        engine,
        "UPDATE account SET balance = 1000000 WHERE id = :id",
        {"id": books["wallet"]},
        "only by posting",
    )
    _refused(engine, "UPDATE account SET balance = balance - 1", match="only by posting")
    with engine.connect() as connection:
        assert (
            connection.execute(
                text("SELECT balance FROM account WHERE id = :id"), {"id": books["wallet"]}
            ).scalar()
            == 100
        )


def test_an_account_cannot_change_kind_tenant_or_currency(engine: Engine, books: dict[str, str]) -> None:
    """Turning a wallet into house money would lift its non-negative floor."""
    _refused(engine, "UPDATE account SET kind = 'house' WHERE id = :id", {"id": books["wallet"]}, "immutable")
    _refused(
        engine, "UPDATE account SET currency = 'PEGGAT' WHERE id = :id", {"id": books["wallet"]}, "immutable"
    )


def test_a_wallet_cannot_be_posted_below_zero(engine: Engine, books: dict[str, str]) -> None:
    with pytest.raises(IntegrityError, match="balance_non_negative"), engine.begin() as connection:
        _raw_transaction(
            connection,
            books["tenant"],
            2,
            books["hash"],
            [(books["wallet"], -101, "CREDIT"), (books["funding"], 101, "CREDIT")],
        )


def test_a_posting_must_be_in_its_accounts_currency_and_tenant(
    engine: Engine, sessions: sessionmaker[Session], books: dict[str, str], make_tenant: object
) -> None:
    with pytest.raises(IntegrityError, match="another tenant or currency"), engine.begin() as connection:
        _raw_transaction(
            connection,
            books["tenant"],
            2,
            books["hash"],
            [(books["house"], 5, "PEGGAT"), (books["funding"], -5, "PEGGAT")],
        )
    stranger = make_tenant()  # type: ignore[operator]
    with unit_of_work(sessions) as session:
        foreign = house_account(session, stranger).id
    # Another tenant's account: the posting trigger finds no account of the posting's tenant (since 0020 there
    # is no foreign key to refuse it first).
    with pytest.raises(IntegrityError, match="another tenant or currency"), engine.begin() as connection:
        _raw_transaction(
            connection,
            books["tenant"],
            2,
            books["hash"],
            [(foreign, 5, "CREDIT"), (books["funding"], -5, "CREDIT")],
        )


def test_amounts_are_non_zero_and_bounded(engine: Engine, books: dict[str, str]) -> None:
    for amount in (0, 10**15 + 1):
        with (
            pytest.raises(IntegrityError, match="amount_non_zero_bounded"),
            engine.begin() as connection,
        ):
            _raw_transaction(
                connection,
                books["tenant"],
                2,
                books["hash"],
                [(books["house"], amount, "CREDIT"), (books["funding"], -amount, "CREDIT")],
            )


@pytest.mark.parametrize(
    ("seq", "prev"),
    [(3, "hash"), (2, "wrong"), (1, "genesis"), (1, "wrong")],
    ids=["gap", "wrong-prev-hash", "duplicate-seq", "second-genesis"],
)
def test_the_chain_can_only_be_extended_at_its_head(
    engine: Engine, books: dict[str, str], seq: int, prev: str
) -> None:
    prev_hash = {"hash": books["hash"], "wrong": _fake_hash(), "genesis": GENESIS}[prev]
    with pytest.raises(IntegrityError, match=r"chain|UNIQUE|duplicate"), engine.begin() as connection:
        _raw_transaction(
            connection,
            books["tenant"],
            seq,
            prev_hash,
            [(books["house"], 5, "CREDIT"), (books["funding"], -5, "CREDIT")],
        )


def test_an_unbalanced_transaction_is_refused_at_commit(engine: Engine, books: dict[str, str]) -> None:
    """The deferred constraint trigger: every statement is accepted, the COMMIT is not."""
    unbalanced = [(books["house"], 10, "CREDIT"), (books["funding"], -9, "CREDIT")]
    with pytest.raises(IntegrityError, match="does not balance"), engine.begin() as connection:
        _raw_transaction(connection, books["tenant"], 2, books["hash"], unbalanced)


def test_reconcile_reports_drift_that_got_past_the_guards(
    engine: Engine, sessions: sessionmaker[Session], books: dict[str, str]
) -> None:
    """What reconcile is for: an owner disabling the trigger that guards balances."""
    with engine.begin() as connection:
        connection.execute(text("ALTER TABLE account DISABLE TRIGGER trg_account_guard"))
        connection.execute(
            text("UPDATE account SET balance = balance + 7 WHERE id = :id"), {"id": books["house"]}
        )
        connection.execute(text("ALTER TABLE account ENABLE TRIGGER trg_account_guard"))
    with unit_of_work(sessions) as session:
        report = reconcile(session, books["tenant"])
    assert not report.ok
    assert [(d.account_id, d.stored - d.computed) for d in report.differences] == [(books["house"], 7)]


def test_reconcile_reports_an_unbalanced_transaction_and_its_broken_chain(
    engine: Engine, sessions: sessionmaker[Session], books: dict[str, str]
) -> None:
    """Past every guard (the triggers off for one session, as a restore of a bad dump would have them): a
    posting's amount changed. The account drifts from its postings, the transaction no longer balances, and
    its hash no longer covers it; reconcile says all three, for the tenant and across tenants."""
    with engine.begin() as connection:
        connection.execute(text("SET LOCAL session_replication_role = replica"))
        changed = connection.execute(
            text(
                "UPDATE posting SET amount = amount + 3 WHERE transaction_id = :txn AND leg = 0 RETURNING account_id"
            ),
            {"txn": books["txn"]},
        ).scalar_one()
    for tenant in (books["tenant"], None):
        report = reconcile(sessions, tenant, check_chain=True)
        assert [(d.account_id, d.stored - d.computed) for d in report.differences] == [(changed, -3)]
        assert report.unbalanced_transactions == [(books["tenant"], 0, 1, books["txn"])]
        assert report.chain_problems == [
            (books["tenant"], "seq 1: hash does not match its contents (the line was edited)"),
            (books["tenant"], "seq 1 does not balance: off by 3 CREDIT"),
            (books["tenant"], "trial balance is off by 3 CREDIT"),
        ]
    assert reconcile(sessions, books["tenant"]).chain_problems == []  # --no-chain


def test_reconcile_lists_the_first_chain_findings_and_counts_the_rest(
    engine: Engine,
    sessions: sessionmaker[Session],
    books: dict[str, str],
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The verifier keeps the first 10,000 findings of an export and counts the rest (1 here, so that the
    three of a changed posting are past it): reconcile says how many it did not list, rather than show a
    broken chain of a million lines as 10,000 problems."""
    monkeypatch.setattr(findings, "MAX_FINDINGS_KEPT", 1)
    with engine.begin() as connection:
        connection.execute(text("SET LOCAL session_replication_role = replica"))
        connection.execute(
            text("UPDATE posting SET amount = amount + 3 WHERE transaction_id = :txn AND leg = 0"),
            {"txn": books["txn"]},
        )
    report = reconcile(sessions, books["tenant"], check_chain=True)
    assert report.chain_problems == [
        (books["tenant"], "seq 1: hash does not match its contents (the line was edited)")
    ]
    assert report.chain_problems_not_listed == {books["tenant"]: 2}

    monkeypatch.setenv("POKNA_DATABASE_URL", database_url)
    monkeypatch.setenv("POKNA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("POKNA_ENV", "test")
    get_settings.cache_clear()
    try:
        ran = CliRunner().invoke(app, ["ledger", "reconcile", "--tenant", books["tenant"]])
    finally:
        get_settings.cache_clear()
    assert ran.exit_code == 1, ran.output
    assert f"CHAIN    tenant {books['tenant']}: ... and 2 more finding(s), not listed\n" in ran.output
