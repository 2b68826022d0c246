"""Wallet answers over REST: each built once, as the documented model, the same whether posted or read."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.types import new_id, utc_now
from support.api_checks import assert_problem
from support.tenant_api import TenantApi, new_tenant


@pytest.fixture
def api(client: TestClient, sessions: sessionmaker[Session]) -> TenantApi:
    return new_tenant(client, sessions)


def test_an_opened_wallet_is_answered_as_it_is_read_back(api: TenantApi) -> None:
    opened = api.post("/v1/accounts", {"external_id": "han"})
    assert opened.status_code == 201, opened.text
    read = api.get(f"/v1/accounts/{opened.json()['id']}")
    assert read.status_code == 200, read.text
    assert opened.json() == read.json()
    assert read.json()["object"] == "account"


def test_a_checkpoint_is_listed_as_it_was_taken(api: TenantApi) -> None:
    """The signed document, byte for byte: what the POST answered (built in its keyed transaction) is what
    the list answers, down to the microseconds of its signed time."""
    api.wallet(5)
    taken = api.post("/v1/ledger/checkpoints")
    assert taken.status_code == 201, taken.text
    listed = api.get("/v1/ledger/checkpoints")
    assert listed.status_code == 200, listed.text
    assert listed.content == b"[" + taken.content + b"]"


def test_a_wallet_another_request_opens_meanwhile_is_409_and_frees_the_key(
    api: TenantApi, engine: Engine, sessions: sessionmaker[Session]
) -> None:
    """The keyed transaction read no wallet for the external id, but another transaction inserted one
    first: the insert waits for it, is refused once it commits, and that refusal is 409 `account_exists`
    (pokna.ledger.accounts_aio.wallet_refusals), not a 500; the key is released, so its retry reads the
    wallet and names it."""
    headers = {"Idempotency-Key": "race-1"}
    body = {"external_id": "raced"}
    other_id = new_id("acct")
    answers: list[Any] = []
    with engine.connect() as other:
        other.execute(
            text(
                "INSERT INTO account (id, tenant_id, kind, currency, external_id, balance, created_at) "
                "VALUES (:id, :tenant_id, 'player_wallet', 'CREDIT', 'raced', 0, :now)"
            ),
            {"id": other_id, "tenant_id": api.tenant_id, "now": utc_now()},
        )
        opener = threading.Thread(
            target=lambda: answers.append(api.post("/v1/accounts", body, headers=headers))
        )
        opener.start()
        _wait_for_a_lock_waiter(sessions, "INSERT INTO account")
        other.commit()
        opener.join(timeout=60)
    assert not opener.is_alive()
    assert_problem(answers[0], 409, "account_exists")
    retried = assert_problem(api.post("/v1/accounts", body, headers=headers), 409, "account_exists")
    assert retried["account_id"] == other_id


def _wait_for_a_lock_waiter(sessions: sessionmaker[Session], statement: str) -> None:
    """Until a backend of this database waits for a lock in `statement` (up to a minute)."""
    for _ in range(600):
        with sessions() as session:
            found = session.scalar(
                text(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query LIKE :pattern AND pid <> pg_backend_pid()"
                ),
                {"pattern": f"%{statement}%"},
            )
        if found is not None:
            return
        threading.Event().wait(0.1)
    raise AssertionError(f"no backend ever waited for a lock in {statement}")


@pytest.mark.citus
def test_a_deposit_answers_its_postings_the_balance_after_it_and_every_metadata_key(api: TenantApi) -> None:
    wallet = api.wallet(balance=40)
    metadata = {"_sale": "keys starting with _sa are the client's, not SQLAlchemy's", "psp": "7781"}
    answer = api.deposit(wallet, 60, reference="r-1", metadata=metadata)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert (body["object"], body["kind"], body["reference"], body["seq"]) == (
        "journal_transaction",
        "deposit",
        "r-1",
        2,
    )
    assert body["metadata"] == metadata
    assert body["balance"] == 100 == api.balance(wallet)
    [credit, debit] = body["postings"]
    assert (credit["account_id"], credit["amount"], credit["currency"]) == (wallet, 60, "CREDIT")
    assert (debit["amount"], debit["currency"]) == (-60, "CREDIT")
    page = api.get(f"/v1/accounts/{wallet}/transactions", params={"limit": 1}).json()
    assert [entry["transaction_id"] for entry in page["data"]] == [body["id"]]
    assert page["data"][0]["created_at"] == body["created_at"]
    assert page["has_more"] is True
    assert page["next_cursor"] == body["id"]
