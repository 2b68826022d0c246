"""The documents that cross into SQL are typed and versioned (pokna.ledger.posting_batch,
pokna.ledger.move_document, pokna.dealer.writes): game_write(), ledger_move() and ledger_post()
refuse a document, or a posting batch inside one, of a version they do not read, before anything is written; and
ledger_move() sets what only the ledger's lock can tell on named members, leaving every other member (a
metadata member of the same name among them) as the API rendered it.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from pokna.outbox.events import DepositPosted, LedgerMovementData
from support.tenant_api import TenantApi

pytest_plugins = ["ledger_fixtures"]

BATCH = {"version": 1, "chain": 0, "accounts": [], "expected_balances": {}, "transactions": []}


def _refusal(engine: Engine, statement: str, tenant_id: str, document: dict[str, Any]) -> str:
    """The message of the refusal, which must be an invalid parameter value (22023) and write nothing."""
    with pytest.raises(DBAPIError) as raised, engine.begin() as connection:
        connection.execute(text(statement), {"tenant": tenant_id, "document": json.dumps(document)})
    error = raised.value.orig
    assert isinstance(error, psycopg.Error)
    assert error.sqlstate == "22023", error
    with engine.connect() as connection:
        assert (
            connection.scalar(
                text("SELECT count(*) FROM webhook_event WHERE tenant_id = :t"), {"t": tenant_id}
            )
            == 0
        )
    return str(error.diag.message_primary)


LEDGER_MOVE = "SELECT ledger_move(:tenant, CAST(:document AS json))"
GAME_WRITE = "SELECT game_write(:tenant, CAST(:document AS json))"
ANNOUNCEMENT = {
    "id": "msg_x",
    "type": "ledger.deposit.posted",
    "ordering_key": "acct_x",
    "body": {"type": "ledger.deposit.posted"},
    "occurred_at": "2026-12-06T00:00:00Z",
}


@pytest.mark.parametrize(
    ("move", "version", "batch_version"),
    [
        ({"version": 2, "batch": BATCH}, "2", "1"),
        ({"batch": BATCH}, "none", "1"),
        ({"version": 1, "batch": {**BATCH, "version": 7}}, "1", "7"),
    ],
    ids=["move-v2", "move-unversioned", "batch-v7"],
)
def test_ledger_move_refuses_a_move_or_a_batch_of_another_version(
    engine: Engine, tenant_id: str, move: dict[str, Any], version: str, batch_version: str
) -> None:
    document = {**move, "wallet_id": "acct_x", "outbox": [ANNOUNCEMENT], "answer": None}
    assert _refusal(engine, LEDGER_MOVE, tenant_id, document) == (
        f"ledger_move: a move of version {version} with a batch of version {batch_version}; "
        "this function reads version 1 of both"
    )


@pytest.mark.parametrize(
    ("write", "message"),
    [
        ({"version": 3, "steps": []}, "game_write: a write of version 3; this function reads version 1"),
        (
            {
                "version": 1,
                "steps": [
                    {"game_id": "game_x", "batch": None},
                    {"game_id": "game_x", "batch": {**BATCH, "version": 2}},
                ],
            },
            "game_write: a posting batch of version 2; this function reads version 1",
        ),
    ],
    ids=["write-v3", "batch-v2"],
)
def test_game_write_refuses_a_write_or_a_batch_of_another_version_before_it_writes(
    engine: Engine, tenant_id: str, write: dict[str, Any], message: str
) -> None:
    document = {**write, "outbox": [ANNOUNCEMENT], "answer": None}
    assert _refusal(engine, GAME_WRITE, tenant_id, document) == message


LEDGER_POST = "SELECT * FROM ledger_post(:tenant, CAST(:document AS jsonb))"


@pytest.mark.parametrize(
    ("batch", "version"),
    [
        ({**BATCH, "version": 2}, "2"),
        ({key: value for key, value in BATCH.items() if key != "version"}, "none"),
    ],
    ids=["batch-v2", "batch-unversioned"],
)
def test_ledger_post_refuses_a_batch_of_another_version_before_it_locks_or_writes(
    engine: Engine, tenant_id: str, batch: dict[str, Any], version: str
) -> None:
    """Its callers check the batch they pass on; the ledger's one way in checks it again, itself."""
    assert _refusal(engine, LEDGER_POST, tenant_id, batch) == (
        f"ledger_post: a posting batch of version {version}; this function reads version 1"
    )
    with engine.connect() as connection:
        heads = connection.scalar(
            text("SELECT count(*) FROM ledger_head WHERE tenant_id = :t"), {"t": tenant_id}
        )
    assert heads == 0
    with engine.begin() as connection:  # the same batch at version 1 is read: an empty batch, posted
        row = connection.execute(
            text(LEDGER_POST), {"tenant": tenant_id, "document": json.dumps(BATCH)}
        ).one()
    assert row.status == "posted", row


def _members(body: str | bytes) -> Any:
    return json.loads(body, object_pairs_hook=list)


def test_a_deposit_announcement_gets_its_seq_and_balance_by_name(
    engine: Engine, tenant_api: TenantApi
) -> None:
    wallet = tenant_api.wallet(7)
    response = tenant_api.deposit(
        wallet, 5, reference="balance", metadata={"ledger_seq": "0", "balance": "0"}
    )
    assert response.status_code == 201, response.text
    answer = response.json()
    with engine.connect() as connection:
        bodies = connection.scalars(
            text("SELECT body FROM webhook_event WHERE tenant_id = :t AND type = 'ledger.deposit.posted'"),
            {"t": tenant_api.tenant_id},
        ).all()
    (body,) = [body for body in bodies if json.loads(body)["data"]["journal_transaction_id"] == answer["id"]]
    expected = DepositPosted(
        timestamp=answer["created_at"],
        data=LedgerMovementData(
            account_id=wallet,
            amount=5,
            currency=answer["postings"][0]["currency"],
            balance=12,
            journal_transaction_id=answer["id"],
            ledger_chain=answer["chain"],
            ledger_seq=answer["seq"],
            reference="balance",
            posted_at=answer["created_at"],
        ),
    )
    assert _members(body) == _members(expected.model_dump_json())
    assert answer["balance"] == 12
    assert answer["metadata"] == {"ledger_seq": "0", "balance": "0"}
