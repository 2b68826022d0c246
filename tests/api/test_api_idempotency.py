"""`Idempotency-Key`: a retry returns the first answer and does nothing more, on every POST."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import APIRouter
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from pokna.api import idempotency
from pokna.api.keyed_writes import KeyedWriteDep
from pokna.app import create_app
from pokna.db.models.idempotency import IdempotencyRecord
from pokna.db.types import utc_now
from pokna.idempotency.keyed import Transaction
from pokna.runtime import Runtime
from pokna.settings import Settings
from support.api_checks import assert_names_field, assert_problem, database_state
from support.tenant_api import TenantApi, new_tenant

KEY_HEADER = "Idempotency-Key"
REPLAYED = "idempotent-replayed"


def _keyed(key: str | bytes) -> dict[str, Any]:
    return {"headers": {KEY_HEADER: key}}


@pytest.fixture
def api(client: TestClient, sessions: sessionmaker[Session]) -> TenantApi:
    return new_tenant(client, sessions)


def _twice(api: TenantApi, sessions: sessionmaker[Session], path: str, body: Any, key: str) -> Any:
    """POST, then retry: the same status and body, marked replayed, and not one row more."""
    first = api.post(path, body, **_keyed(key))
    assert first.status_code in (200, 201), f"{path}: {first.text}"
    assert REPLAYED not in first.headers
    _assert_replays(api, sessions, path, body, key, first)
    return first.json()


def _assert_replays(
    api: TenantApi, sessions: sessionmaker[Session], path: str, body: Any, key: str, first: Any
) -> None:
    before = database_state(sessions)
    again = api.post(path, body, **_keyed(key))
    assert again.status_code == first.status_code, f"{path}: {again.text}"
    assert again.json() == first.json(), path
    assert again.headers[REPLAYED] == "true", path
    assert database_state(sessions) == before, path


def _next_action(game: dict[str, Any]) -> dict[str, Any]:
    turn = game["turn"]
    account = turn["account_ids"][0]
    allowed = turn["allowed_actions"]
    for kind in ("start", "claim", "roll"):
        if kind in allowed:
            return {"type": kind, "account_id": account}
    return {"type": "vote", "account_id": account, "choice": "split"}


def test_every_post_replays_its_first_answer(api: TenantApi, sessions: sessionmaker[Session]) -> None:
    wallet = _twice(api, sessions, "/v1/accounts", {"external_id": "lando"}, "open-lando")["id"]
    deposit = _twice(api, sessions, f"/v1/accounts/{wallet}/deposits", {"amount": 100}, "deposit-1")
    assert deposit["balance"] == 100
    _twice(api, sessions, f"/v1/accounts/{wallet}/withdrawals", {"amount": 30}, "withdraw-1")
    assert api.balance(wallet) == 70  # each posted once

    vigo, other = api.wallet(100), api.wallet(100)
    terms = {"vigo_account_id": vigo, "player_account_ids": [wallet, other], "stake": 5}
    game = _twice(api, sessions, "/v1/games", terms, "game-1")
    seed = {"type": "set_client_seed", "account_id": wallet, "client_seed": "sabacc"}
    game = _twice(api, sessions, f"/v1/games/{game['id']}/actions", seed, "act-seed")
    for step in range(40):
        if game["status"] in ("settled", "cancelled"):
            break
        game = _twice(api, sessions, f"/v1/games/{game['id']}/actions", _next_action(game), f"act-{step}")
    assert game["status"] == "settled"
    assert api.balance(vigo) + api.balance(wallet) + api.balance(other) == 270

    table = _twice(api, sessions, "/v1/tables", {"account_ids": [vigo, wallet, other], "stake": 5}, "table-1")
    rounds = f"/v1/tables/{table['id']}/rounds"
    first_round = _twice(api, sessions, rounds, None, "round-1")
    assert first_round["round_number"] == 1
    # the replay above was no second deal: dealing again for real is refused while round 1 is open
    assert_problem(api.post(rounds), 409, "round_in_progress")

    checkpoint = _twice(api, sessions, "/v1/ledger/checkpoints", None, "checkpoint-1")
    assert [c["hash"] for c in api.get("/v1/ledger/checkpoints").json()] == [checkpoint["hash"]]
    assert api.get("/v1/ledger/trial-balance").json()["total"] == 0


def test_quoted_and_unquoted_keys_are_the_same_key(api: TenantApi, sessions: sessionmaker[Session]) -> None:
    wallet = api.wallet()
    path = f"/v1/accounts/{wallet}/deposits"
    first = api.post(path, {"amount": 5}, **_keyed('"deposit-7"'))
    assert first.status_code == 201
    for spelling in ("deposit-7", '"deposit-7"'):
        again = api.post(path, {"amount": 5}, **_keyed(spelling))
        assert again.status_code == 201
        assert again.headers[REPLAYED] == "true"
        assert again.json() == first.json()
    assert api.balance(wallet) == 5


def test_the_same_json_spelled_differently_is_the_same_request(api: TenantApi) -> None:
    wallet = api.wallet()
    path = f"/v1/accounts/{wallet}/deposits"
    json_headers = {"content-type": "application/json", KEY_HEADER: "spelled"}
    first = api.post(path, content=b'{"amount":5,"reference":"psp-1"}', headers=json_headers)
    again = api.post(path, content=b'{ "reference": "psp-1",\n  "amount": 5 }', headers=json_headers)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.headers[REPLAYED] == "true"
    assert api.balance(wallet) == 5


def test_a_key_reused_for_another_request_is_422(api: TenantApi, sessions: sessionmaker[Session]) -> None:
    wallet, other = api.wallet(50), api.wallet(50)
    assert api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 5}, **_keyed("pay-1")).status_code == 201
    before = database_state(sessions)
    for path, body in (
        (f"/v1/accounts/{wallet}/deposits", {"amount": 6}),  # another amount
        (f"/v1/accounts/{wallet}/deposits", {"amount": 5, "reference": "r"}),  # another field
        (f"/v1/accounts/{other}/deposits", {"amount": 5}),  # another account
        (f"/v1/accounts/{wallet}/withdrawals", {"amount": 5}),  # another endpoint
        ("/v1/accounts", {}),
    ):
        problem = assert_problem(api.post(path, body, **_keyed("pay-1")), 422, "idempotency_key_reused")
        assert problem["invalid_params"][0]["name"] == "header.Idempotency-Key"
    assert database_state(sessions) == before
    assert (api.balance(wallet), api.balance(other)) == (55, 50)


def test_keys_belong_to_one_tenant(client: TestClient, sessions: sessionmaker[Session]) -> None:
    jabba, watto = new_tenant(client, sessions, "Jabba"), new_tenant(client, sessions, "Watto")
    opened = [tenant.post("/v1/accounts", {}, **_keyed("shared")) for tenant in (jabba, watto)]
    assert [response.status_code for response in opened] == [201, 201]
    assert all(REPLAYED not in response.headers for response in opened)
    wallets = [response.json()["id"] for response in opened]
    assert wallets[0] != wallets[1]
    for tenant, wallet, amount in ((jabba, wallets[0], 7), (watto, wallets[1], 9)):
        assert (
            tenant.post(f"/v1/accounts/{wallet}/deposits", {"amount": amount}, **_keyed("d")).status_code
            == 201
        )
    assert (jabba.balance(wallets[0]), watto.balance(wallets[1])) == (7, 9)


def test_a_failed_request_does_not_burn_its_key(api: TenantApi, sessions: sessionmaker[Session]) -> None:
    wallet = api.wallet()
    withdraw = f"/v1/accounts/{wallet}/withdrawals"
    for _attempt in range(2):  # refused each time on its merits, never replayed
        response = api.post(withdraw, {"amount": 50}, **_keyed("cash-out"))
        assert_problem(response, 409, "insufficient_funds")
        assert REPLAYED not in response.headers
    assert api.deposit(wallet, 80).status_code == 201
    paid = api.post(withdraw, {"amount": 50}, **_keyed("cash-out"))
    assert paid.status_code == 201, paid.text
    _assert_replays(api, sessions, withdraw, {"amount": 50}, "cash-out", paid)
    assert api.balance(wallet) == 30

    # an invalid body claims nothing either: the key is still free for the corrected request
    deposits = f"/v1/accounts/{wallet}/deposits"
    assert_problem(api.post(deposits, {"amount": 0}, **_keyed("top-up")), 422, "validation_error")
    assert api.post(deposits, {"amount": 20}, **_keyed("top-up")).status_code == 201
    assert api.balance(wallet) == 50


@pytest.mark.parametrize("movement", ["deposits", "withdrawals"])
def test_money_moves_only_under_a_key(api: TenantApi, sessions: sessionmaker[Session], movement: str) -> None:
    """The same deposit sent twice without a key credited twice: a write that moves money now refuses a
    request without a key, saying which header and why, and moves nothing."""
    wallet = api.wallet(50)
    before = database_state(sessions)
    for _attempt in range(2):
        problem = assert_problem(
            api.post(f"/v1/accounts/{wallet}/{movement}", {"amount": 5}), 400, "idempotency_key_required"
        )
        assert "Idempotency-Key" in problem["detail"]
        assert "retry" in problem["detail"]
        assert [param["name"] for param in problem["invalid_params"]] == ["header.Idempotency-Key"]
        assert_names_field(problem, "header.Idempotency-Key")  # the pointer a malformed key's has
    assert database_state(sessions) == before
    assert api.balance(wallet) == 50
    for _attempt in range(2):  # the same request under a key moves the money once
        assert (
            api.post(f"/v1/accounts/{wallet}/{movement}", {"amount": 5}, **_keyed("once")).status_code == 201
        )
    assert api.balance(wallet) == (55 if movement == "deposits" else 45)


def test_the_document_says_money_moves_need_a_key(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/v1/accounts/{account_id}/deposits", "/v1/accounts/{account_id}/withdrawals"):
        (header,) = [p for p in paths[path]["post"]["parameters"] if p["name"] == KEY_HEADER]
        assert header["required"] is True, path
    (optional,) = [p for p in paths["/v1/accounts"]["post"]["parameters"] if p["name"] == KEY_HEADER]
    assert optional["required"] is False


_KEY_CHARACTERS = st.sampled_from([" ", '"', "a", "~", "\t", "\x7f", "\xe9"])
_SENT_KEYS = st.one_of(
    st.text(_KEY_CHARACTERS, max_size=6),
    st.builds(
        lambda edge, length, inner, quote: quote + edge + "k" * length + inner + edge + quote,
        st.sampled_from(["", " ", "a"]),
        st.integers(250, 258),
        st.text(_KEY_CHARACTERS, max_size=2),
        st.sampled_from(["", '"']),
    ),
)


@given(_SENT_KEYS)
def test_the_words_agree_with_the_documented_pattern(sent: str) -> None:
    """A key is refused in words exactly when the pattern the document gives refuses it."""
    refused = idempotency.key_problem(sent) is not None
    assert refused == (re.fullmatch(idempotency.IDEMPOTENCY_KEY_PATTERN, sent) is None)


@pytest.mark.parametrize(
    ("key", "words"),
    [
        pytest.param("k" * 256, "at most 255 characters; this one has 256", id="256-characters"),
        pytest.param('"' + "k" * 256 + '"', "at most 255 characters; this one has 256", id="quoted"),
        pytest.param("caf\xe9".encode("latin-1"), "printable ASCII characters only", id="latin-1"),
        pytest.param("tab\tinside", "U+0009 at position 3", id="tab"),
    ],
)
def test_an_invalid_key_is_refused_in_words(api: TenantApi, key: str | bytes, words: str) -> None:
    """Not the regular expression the header is documented by: what is wrong, naming the header."""
    wallet = api.wallet()
    for path in (f"/v1/accounts/{wallet}/deposits", "/v1/accounts"):
        problem = assert_problem(
            api.post(path, {"amount": 5} if "deposits" in path else {}, **_keyed(key)), 422
        )
        (param,) = problem["invalid_params"]
        assert param["name"] == "header.Idempotency-Key"
        assert words in param["reason"], param["reason"]
        assert "Idempotency-Key" in param["reason"]
        assert "[!-~]" not in problem["detail"]


@pytest.mark.parametrize(
    "key",
    [
        pytest.param("k" * 256, id="256-characters"),
        pytest.param('"' + "k" * 256 + '"', id="256-characters-quoted"),
        pytest.param("ключ".encode(), id="non-ascii"),
        pytest.param("caf\xe9".encode("latin-1"), id="latin-1"),
        pytest.param("tab\tinside", id="tab"),
    ],
)
def test_an_invalid_key_is_422_naming_the_header(
    api: TenantApi, sessions: sessionmaker[Session], key: str | bytes
) -> None:
    wallet = api.wallet()
    before = database_state(sessions)
    problem = assert_problem(api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 5}, **_keyed(key)), 422)
    assert [param["name"] for param in problem["invalid_params"]] == ["header.Idempotency-Key"]
    assert database_state(sessions) == before


@pytest.mark.parametrize("key", ["", "   ", '""', '" "', '"'])
def test_an_empty_or_blank_key_is_422_naming_the_header(
    api: TenantApi, sessions: sessionmaker[Session], key: str
) -> None:
    """`""` was kept as a literal two-character key (issue 28, F12)."""
    wallet = api.wallet()
    before = database_state(sessions)
    response = api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 5}, **_keyed(key))
    problem = assert_problem(response, 422, "validation_error")
    assert [param["name"] for param in problem["invalid_params"]] == ["header.Idempotency-Key"]
    assert database_state(sessions) == before


def test_the_longest_key_is_accepted(api: TenantApi) -> None:
    wallet = api.wallet()
    for key in ("k" * 255, '"' + "q" * 255 + '"'):
        first = api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 5}, **_keyed(key))
        assert first.status_code == 201, first.text
        assert (
            api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 5}, **_keyed(key)).headers[REPLAYED]
            == "true"
        )
    assert api.balance(wallet) == 10


def _fingerprint(sessions: sessionmaker[Session], tenant_id: str, key: str) -> str:
    with sessions() as session:
        record = session.get(IdempotencyRecord, (tenant_id, key))
        assert record is not None
        return record.request_fingerprint


def _set_claim(sessions: sessionmaker[Session], tenant_id: str, key: str, **values: Any) -> None:
    with sessions.begin() as session:
        session.execute(
            update(IdempotencyRecord)
            .where(IdempotencyRecord.tenant_id == tenant_id, IdempotencyRecord.key == key)
            .values(**values)
        )


def _unfinished_claim(
    api: TenantApi, sessions: sessionmaker[Session], path: str, body: Any, key: str
) -> None:
    """A claim for this very request, committed and never completed: its request is still running, or
    its process died."""
    assert api.post(path, body, **_keyed(f"learn-{key}")).status_code == 201  # the same request, another key
    now = utc_now()
    with sessions.begin() as session:
        session.add(
            IdempotencyRecord(
                tenant_id=api.tenant_id,
                key=key,
                request_fingerprint=_fingerprint(sessions, api.tenant_id, f"learn-{key}"),
                claim_token="a-request-cut-off",
                created_at=now,
                locked_until=now + timedelta(minutes=5),  # an older version's lease: not waited out
                expires_at=now + timedelta(hours=24),
            )
        )


def test_an_unfinished_claim_nobody_holds_is_taken_over_at_once(
    api: TenantApi, sessions: sessionmaker[Session]
) -> None:
    wallet = api.wallet()
    path = f"/v1/accounts/{wallet}/deposits"
    body = {"amount": 25}
    _unfinished_claim(api, sessions, path, body, "cut-off")
    before = database_state(sessions)
    assert_problem(api.post(path, {"amount": 26}, **_keyed("cut-off")), 422, "idempotency_key_reused")
    assert database_state(sessions) == before

    taken_over = api.post(path, body, **_keyed("cut-off"))  # nobody holds the claim: its holder died
    assert taken_over.status_code == 201, taken_over.text
    assert REPLAYED not in taken_over.headers
    _assert_replays(api, sessions, path, body, "cut-off", taken_over)
    assert api.balance(wallet) == 50


def test_a_retry_while_the_first_runs_is_409_until_its_holder_lets_go(
    api: TenantApi, sessions: sessionmaker[Session]
) -> None:
    """A running request holds its claim row locked."""
    wallet = api.wallet()
    path = f"/v1/accounts/{wallet}/deposits"
    body = {"amount": 25}
    _unfinished_claim(api, sessions, path, body, "running")
    with sessions() as holder:  # the first request, alive and at work
        holder.execute(
            select(IdempotencyRecord)
            .where(IdempotencyRecord.tenant_id == api.tenant_id, IdempotencyRecord.key == "running")
            .with_for_update()
        )
        before = database_state(sessions)
        assert_problem(api.post(path, body, **_keyed("running")), 409, "idempotency_request_in_progress")
        assert database_state(sessions) == before
        holder.rollback()  # it died: its connection's locks went with it
    taken_over = api.post(path, body, **_keyed("running"))
    assert taken_over.status_code == 201, taken_over.text
    assert api.balance(wallet) == 50


def test_an_expired_key_may_be_used_again(api: TenantApi, sessions: sessionmaker[Session]) -> None:
    wallet = api.wallet()
    path = f"/v1/accounts/{wallet}/deposits"
    assert api.post(path, {"amount": 5}, **_keyed("monthly")).status_code == 201
    assert_problem(api.post(path, {"amount": 7}, **_keyed("monthly")), 422, "idempotency_key_reused")
    _set_claim(sessions, api.tenant_id, "monthly", expires_at=utc_now() - timedelta(seconds=1))
    again = api.post(path, {"amount": 7}, **_keyed("monthly"))
    assert again.status_code == 201, again.text
    assert REPLAYED not in again.headers
    assert api.balance(wallet) == 12


async def _tenant(tenant_id: str) -> str:
    """The read of a write that reads nothing of its own: its transaction's first round trip still holds
    the claim (or checks the API key)."""
    return tenant_id


class _Receipt(BaseModel):
    number: int
    issued_at: datetime


def test_a_typed_answer_is_sent_and_replayed_as_its_model_encodes(
    settings: Settings, runtime: Runtime, sessions: sessionmaker[Session]
) -> None:
    issued: list[int] = []
    router = APIRouter()

    @router.post("/test/receipts", status_code=201, response_model=_Receipt)
    async def issue(write: KeyedWriteDep) -> _Receipt:
        async def work(opened: Transaction) -> _Receipt:
            await opened.read(_tenant)
            issued.append(len(issued) + 1)
            return _Receipt(number=issued[-1], issued_at=datetime(2024, 5, 4, tzinfo=UTC))

        return await write(_Receipt, work, status=201)

    app = create_app(settings, runtime)
    app.include_router(router)
    with TestClient(app) as client:
        api = new_tenant(client, sessions)
        first = api.post("/test/receipts", **_keyed("receipt-1"))
        again = api.post("/test/receipts", **_keyed("receipt-1"))
        unkeyed = api.post("/test/receipts")
    assert first.status_code == 201, first.text
    assert first.json() == {"number": 1, "issued_at": "2024-05-04T00:00:00Z"}
    assert (again.status_code, again.json(), again.headers[REPLAYED]) == (201, first.json(), "true")
    assert (unkeyed.status_code, unkeyed.json()["number"]) == (201, 2)
    assert issued == [1, 2]
