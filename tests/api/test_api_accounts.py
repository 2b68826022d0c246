"""Wallet answers over REST: each built once, as the documented model, the same whether posted or read."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

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
    """The signed document, byte for byte: what the POST answered (built on the session) is what the list
    (read on the driver) answers, down to the microseconds of its signed time."""
    api.wallet(5)
    taken = api.post("/v1/ledger/checkpoints")
    assert taken.status_code == 201, taken.text
    listed = api.get("/v1/ledger/checkpoints")
    assert listed.status_code == 200, listed.text
    assert listed.content == b"[" + taken.content + b"]"


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
