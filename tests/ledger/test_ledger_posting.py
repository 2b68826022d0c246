"""Money in and out as a client moves it, over HTTP: balances, refusals, idempotency and the chain.

Money moves between wallets only in games (tests/dealer); the ledger's pure checks of what a posting may be
are tests/ledger/test_ledger_checks.py's.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic_core import to_json
from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.ledger import JournalTransaction
from pokna.ledger import AccountExists, AccountKind
from pokna.ledger.schemas import JournalTransactionOut
from pokna_verify.ledger.chain import chain_for
from support.driver import funding_account, open_account, reconcile
from support.ledger_reads import balance_of, get_transaction, system_balance, trial_balance
from support.sessions import unit_of_work
from support.tenant_api import TenantApi, money_key, new_tenant

pytest_plugins = ["ledger_fixtures"]


def _wallet(session: Session, tenant_id: str, name: str, currency: str = "CREDIT") -> str:
    return open_account(
        session, tenant_id=tenant_id, kind=AccountKind.PLAYER_WALLET, currency=currency, external_id=name
    ).id


def _posted(response: Any, status: int = 201) -> dict[str, Any]:
    assert response.status_code == status, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _head_seq(sessions: sessionmaker[Session], tenant_id: str, chain: int | None = None) -> int:
    """The chain's last seq; without a chain, how many transactions the tenant has on all its chains."""
    with sessions() as session:
        rows = session.execute(
            select(JournalTransaction.chain, JournalTransaction.seq).where(
                JournalTransaction.tenant_id == tenant_id
            )
        ).all()
    if chain is None:
        return len(rows)
    return max((seq for on, seq in rows if on == chain), default=0)


def test_deposit_and_withdraw_move_money_between_wallet_and_funding(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    tenant_id = tenant_api.tenant_id
    wallet = tenant_api.wallet()
    deposited = _posted(tenant_api.deposit(wallet, 500, reference="dep-1"))
    withdrawn = _posted(tenant_api.withdraw(wallet, 120))
    assert (deposited["balance"], withdrawn["balance"]) == (500, 380)
    assert tenant_api.balance(wallet) == 380
    with unit_of_work(sessions) as session:
        funding = funding_account(session, tenant_id, chain=chain_for(wallet))  # the wallet's chain's
        assert balance_of(session, funding.id) == -380
        assert system_balance(session, tenant_id, "external_funding") == -380
        assert funding.kind == "external_funding"
        trial = trial_balance(session, tenant_id)
        assert {entry.account_id: entry.balance for entry in trial.accounts} == {
            wallet: 380,
            funding.id: -380,
        }
        assert trial.total == 0
        amounts = session.execute(text("SELECT account_id, amount FROM posting ORDER BY amount")).all()
        assert [(row.account_id, row.amount) for row in amounts] == [
            (funding.id, -500),
            (wallet, -120),
            (funding.id, 120),
            (wallet, 500),
        ]


def test_insufficient_funds_names_the_wallet_and_posts_nothing(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    wallet = tenant_api.wallet(100)
    seq_before = _head_seq(sessions, tenant_api.tenant_id)
    refused = tenant_api.withdraw(wallet, 101)
    problem = _posted(refused, 409)
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert (problem["code"], problem["account_id"], problem["balance"], problem["change"]) == (
        "insufficient_funds",
        wallet,
        100,
        -101,
    )
    assert _head_seq(sessions, tenant_api.tenant_id) == seq_before
    assert tenant_api.balance(wallet) == 100
    # Exactly the whole balance is fine.
    assert _posted(tenant_api.withdraw(wallet, 100))["balance"] == 0


def test_money_moves_only_for_the_tenants_own_wallets(
    client: TestClient, sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    stranger = new_tenant(client, sessions, "Tosche Station")
    theirs = stranger.wallet(10)
    with unit_of_work(sessions) as session:
        house = open_account(session, tenant_id=tenant_api.tenant_id, kind="house", external_id="h").id
    for account_id, status, code in (
        (theirs, 404, "account_not_found"),
        ("acct_nope", 404, "account_not_found"),
        (house, 422, "invalid_request"),  # money enters and leaves through player wallets only
    ):
        for move in (tenant_api.deposit, tenant_api.withdraw):
            assert _posted(move(account_id, 5), status)["code"] == code
    assert _posted(tenant_api.deposit(tenant_api.wallet(), -5), 422)["code"] == "validation_error"
    assert _head_seq(sessions, tenant_api.tenant_id) == 0
    assert stranger.balance(theirs) == 10


def test_a_wallet_moves_money_in_its_own_currency(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    credit = tenant_api.wallet(5)
    created = tenant_api.post("/v1/accounts", {"currency": "PEGGAT"})
    peggat = _posted(created)["id"]
    answer = _posted(tenant_api.deposit(peggat, 7))
    assert {posting["currency"] for posting in answer["postings"]} == {"PEGGAT"}
    with unit_of_work(sessions) as session:
        for currency, wallet, amount in (("CREDIT", credit, 5), ("PEGGAT", peggat, 7)):
            trial = trial_balance(session, tenant_api.tenant_id, currency)
            assert trial.total == 0
            assert {entry.account_id: entry.balance for entry in trial.accounts} == {
                wallet: amount,
                funding_account(session, tenant_api.tenant_id, currency, chain_for(wallet)).id: -amount,
            }
        currencies = session.execute(text("SELECT currency, count(*) FROM posting GROUP BY currency")).all()
    assert dict(currencies) == {"CREDIT": 2, "PEGGAT": 2}


def test_a_retry_under_the_same_key_answers_the_original_and_posts_nothing(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    wallet = tenant_api.wallet(50)
    path, key = f"/v1/accounts/{wallet}/withdrawals", {"Idempotency-Key": "wd-1"}
    first = tenant_api.post(path, {"amount": 20}, headers=key)
    again = tenant_api.post(path, {"amount": 20}, headers=key)
    assert _posted(again) == _posted(first)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert [posting["amount"] for posting in again.json()["postings"]] == [-20, 20]
    problem = _posted(tenant_api.post(path, {"amount": 25}, headers=key), 422)
    assert problem["code"] == "idempotency_key_reused"
    assert tenant_api.balance(wallet) == 30
    assert _head_seq(sessions, tenant_api.tenant_id) == 2


def test_an_idempotency_key_is_per_tenant(client: TestClient, sessions: sessionmaker[Session]) -> None:
    tenants = [new_tenant(client, sessions, name) for name in ("Mos Espa", "Mos Eisley")]
    answers = [
        _posted(
            api.post(
                f"/v1/accounts/{api.wallet(10)}/withdrawals", {"amount": 1}, headers={"Idempotency-Key": "k"}
            )
        )
        for api in tenants
    ]
    assert answers[0]["id"] != answers[1]["id"]
    assert [
        api.balance(answer["postings"][0]["account_id"]) for api, answer in zip(tenants, answers, strict=True)
    ] == [
        9,
        9,
    ]


def test_sequence_is_gap_free_and_each_hash_covers_its_documented_fields(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    wallet = tenant_api.wallet()
    while chain_for(wallet) == 0:  # a chain other than 0, which is hashed too
        wallet = tenant_api.wallet()
    chain = chain_for(wallet)
    _posted(tenant_api.deposit(wallet, 90))
    for note in ("first", 'héllo "quoted"'):
        _posted(tenant_api.withdraw(wallet, 9, reference="game_1", metadata={"seat": "2", "note": note}))
    with unit_of_work(sessions) as session:
        rows = session.scalars(
            select(JournalTransaction)
            .where(JournalTransaction.tenant_id == tenant_api.tenant_id, JournalTransaction.chain == chain)
            .order_by(JournalTransaction.seq)
        ).all()
        assert [row.seq for row in rows] == [1, 2, 3]
        assert rows[0].prev_hash == "0" * 64
        assert [row.prev_hash for row in rows[1:]] == [row.hash for row in rows[:-1]]
        last = rows[2]
        postings = session.execute(
            text("SELECT account_id, amount, currency FROM posting WHERE transaction_id = :t ORDER BY leg"),
            {"t": last.id},
        ).all()
    # Rebuilt by hand from the documented encoding: JCS is sorted keys, no spaces, UTF-8; a chain other than
    # 0 is hashed too.
    document = {
        "chain": chain,
        "created_at": last.created_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "id": last.id,
        "kind": "withdrawal",
        "metadata": {"note": 'héllo "quoted"', "seat": "2"},
        "postings": [{"account_id": a, "amount": m, "currency": c} for a, m, c in postings],
        "prev_hash": rows[1].hash,
        "reference": "game_1",
        "seq": 3,
        "tenant_id": tenant_api.tenant_id,
    }
    encoded = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert last.hash == hashlib.sha256(encoded).hexdigest()


def test_the_answer_is_what_was_stored(sessions: sessionmaker[Session], tenant_api: TenantApi) -> None:
    """The answer is the stored transaction, its identity and chain place included: the API's document,
    member for member in its order and value for value (ledger_move() sets the seq, the hashes and the
    balance on it by name: its own members are spaced as PostgreSQL's json_object_agg writes them, each
    value's text as the API rendered it), and a replay is the first answer byte for byte. Text that JSON
    must escape (control characters, quotes, backslashes, non-ASCII) is stored and hashed as given, and
    text that reads like a template (`%`, `%1$s`, a member's name) is only text."""
    wallet = tenant_api.wallet()
    metadata = {"note": 'ctl \x01\t\n "quoted" back\\slash é 🎲 100% %1$s %%s "seq":1', "seq": "2"}
    reference = 'table "9" — é %4$s'
    path, key = f"/v1/accounts/{wallet}/deposits", money_key()
    body = {"amount": 5, "reference": reference, "metadata": metadata}
    first = tenant_api.post(path, body, headers=key)
    answer = _posted(first)
    with unit_of_work(sessions) as session:
        stored = get_transaction(session, answer["id"], tenant_id=tenant_api.tenant_id)
        assert reconcile(session, tenant_api.tenant_id, check_chain=True).ok
    assert (stored.chain, stored.seq, stored.kind, stored.prev_hash, stored.hash) == (
        answer["chain"],
        answer["seq"],
        answer["kind"],
        answer["prev_hash"],
        answer["hash"],
    )
    assert (stored.metadata, stored.reference) == (metadata, reference)
    assert [(p.account_id, p.amount, p.currency) for p in stored.postings] == [
        (p["account_id"], p["amount"], p["currency"]) for p in answer["postings"]
    ]
    assert stored.created_at.isoformat().replace("+00:00", "Z") == answer["created_at"]
    rendered = JournalTransactionOut.of(stored, balance=5).model_dump_json()
    assert _members(first.content) == _members(rendered)
    assert b'"metadata" : ' + to_json(metadata) + b', "postings" : ' in first.content  # values as rendered
    replay = tenant_api.post(path, body, headers=key)
    assert replay.content == first.content
    assert _posted(replay) == answer


def _members(text: str | bytes) -> object:
    """A JSON document with each object as its list of (name, value) pairs: equal only if the members are
    the same in the same order."""
    return json.loads(text, object_pairs_hook=list)


def test_account_history_pages_newest_first(tenant_api: TenantApi) -> None:
    wallet = tenant_api.wallet(1000)
    for amount in range(1, 6):
        _posted(tenant_api.withdraw(wallet, amount))
    path = f"/v1/accounts/{wallet}/transactions"
    first = _posted(tenant_api.get(path, params={"limit": 4}), 200)
    assert [entry["amount"] for entry in first["data"]] == [-5, -4, -3, -2]
    assert first["has_more"]
    second = _posted(tenant_api.get(path, params={"limit": 4, "starting_after": first["next_cursor"]}), 200)
    assert [entry["amount"] for entry in second["data"]] == [-1, 1000]
    assert not second["has_more"]
    assert second["next_cursor"] is None


def test_an_external_id_names_one_account_per_kind(sessions: sessionmaker[Session], tenant_id: str) -> None:
    with unit_of_work(sessions) as session:
        first = _wallet(session, tenant_id, "boba")
        with pytest.raises(AccountExists) as raised:
            _wallet(session, tenant_id, "boba")
        assert raised.value.extensions["account_id"] == first
        open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="boba")
        open_account(session, tenant_id=tenant_id, kind="player_wallet")
        open_account(session, tenant_id=tenant_id, kind="player_wallet")  # no external id: no uniqueness


def test_reconcile_finds_nothing_wrong_with_service_written_books(
    sessions: sessionmaker[Session], tenant_api: TenantApi
) -> None:
    wallet = tenant_api.wallet(33)
    _posted(tenant_api.withdraw(wallet, 3))
    with unit_of_work(sessions) as session:
        report = reconcile(session, tenant_api.tenant_id, check_chain=True)
    assert report.ok, report
