"""Requests an integrator gets wrong, or an attacker sends on purpose, that the routes' schemas alone do
not catch: each is answered with what the route documents, never a 500, and writes nothing it should not."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from support.api_checks import assert_names_field, assert_problem, database_state
from support.tenant_api import money_key, new_tenant

DEEP = b"[" * 5000 + b"]" * 5000


def test_a_deeply_nested_body_on_a_keyed_route_without_a_body_is_not_a_500(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """A route that reads no body still fingerprints a keyed request's body, so that a retry is told from
    another request: a body nested past the JSON parser's depth is compared as the bytes sent, like any
    other body that is not JSON, rather than failing the request."""
    api = new_tenant(client, sessions)
    api.wallet(10)
    endpoint = api.post(
        "/v1/webhooks/endpoints", {"url": "http://127.0.0.1:9/hook", "event_types": ["game.turn"]}
    )
    assert endpoint.status_code == 201, endpoint.text
    for path, status in [
        ("/v1/ledger/checkpoints", 201),
        (f"/v1/webhooks/endpoints/{endpoint.json()['id']}/rotate-secret", 200),
    ]:
        key = money_key()
        headers = {**key, "content-type": "application/json"}
        first = api.post(path, content=DEEP, headers=headers)
        assert first.status_code == status, first.text
        retry = api.post(path, content=DEEP, headers=headers)
        assert (retry.status_code, retry.json()) == (status, first.json())
        other = api.post(path, content=b"[]", headers=headers)
        assert (other.status_code, other.json()["code"]) == (422, "idempotency_key_reused")


def test_two_idempotency_keys_on_one_request_are_refused_naming_the_header(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """Which of two keys a request is under is a guess (the first here, the last or both joined elsewhere,
    e.g. behind a proxy that adds its own): a retry that sent them in another order, or with a proxy's
    fresh one first, would post again. Refused before anything is claimed or written, on every kind of
    keyed route: a money move, a game's creation, an admin write."""
    api = new_tenant(client, sessions)
    wallet, player = api.wallet(10), api.wallet(10)
    writes = [
        (f"/v1/accounts/{wallet}/deposits", {"amount": 5}),
        ("/v1/games", {"vigo_account_id": wallet, "player_account_ids": [player], "stake": 1}),
        ("/v1/accounts", {}),
    ]
    before = database_state(sessions)
    for path, body in writes:
        headers = [*api.headers.items(), ("Idempotency-Key", "first-1"), ("Idempotency-Key", "second-2")]
        problem = assert_problem(client.post(path, json=body, headers=headers), 422, "validation_error")
        assert_names_field(problem, "header.Idempotency-Key")
    assert database_state(sessions) == before
    assert api.deposit(wallet, 5).status_code == 201  # one key is as before


def test_metadata_the_schema_allows_but_the_journal_cannot_hold_is_refused_naming_it(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """20 values of 200 characters fit the body's schema, but not the journal's 8192 bytes of canonical
    JSON once a character takes several bytes: refused as bad input naming `body.metadata`, as the schema's
    own limits are, not as a ledger failure the route does not document."""
    api = new_tenant(client, sessions)
    wallet = api.wallet(10)
    too_much = {f"k{index}": "\U0001f3b2" * 200 for index in range(20)}
    before = database_state(sessions)
    for kind in ("deposits", "withdrawals"):
        sent = api.post(
            f"/v1/accounts/{wallet}/{kind}", {"amount": 1, "metadata": too_much}, headers=money_key()
        )
        assert_names_field(assert_problem(sent, 422, "validation_error"), "body.metadata")
    assert database_state(sessions) == before
    fits = {f"k{index}": "\U0001f3b2" * 100 for index in range(20)}  # 8171 bytes in all
    fitting = api.post(
        f"/v1/accounts/{wallet}/deposits", {"amount": 1, "metadata": fits}, headers=money_key()
    )
    assert fitting.status_code == 201, fitting.text
    assert fitting.json()["metadata"] == fits


def test_a_null_rake_is_the_tenants_default_as_the_document_says_not_none(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """A rake's `cap: null` means no cap, so `rake: null` reads as no rake; it takes the tenant's default,
    which the document said only of an absent rake. No rake at all is `{"bps": 0}`."""
    api = new_tenant(client, sessions)
    assert api.put("/v1/tenant/settings", {"rake": {"bps": 500, "cap": None}}).status_code == 200
    vigo, player = api.wallet(10), api.wallet(10)
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for path, body, schema in [
        ("/v1/games", {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 1}, "GameCreate"),
        ("/v1/tables", {"account_ids": [vigo, player], "stake": 1}, "TableCreate"),
    ]:
        assert (
            "Absent or null: the tenant's default rake"
            in schemas[schema]["properties"]["rake"]["description"]
        )
        for rake, taken in [(None, {"bps": 500, "cap": None}), ({"bps": 0}, {"bps": 0, "cap": None})]:
            created = api.post(path, {**body, "rake": rake})
            assert created.status_code == 201, created.text
            assert created.json()["rake"] == taken


def test_a_cancel_naming_someone_not_seated_is_refused_and_the_game_stays_open(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """A cancel's `account_id` is optional, but one that names nobody at this table (a wallet of another
    game, an id from nowhere) is the mark of a request sent to the wrong game: refused as every other
    action naming an account not seated is, rather than cancelling whichever game it reached."""
    api = new_tenant(client, sessions)
    vigo, player, stranger = api.wallet(10), api.wallet(10), api.wallet(10)
    body = {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 1}
    game = api.post("/v1/games", body).json()
    actions = f"/v1/games/{game['id']}/actions"
    for who in (stranger, "acct_" + "0" * 32):
        refused = api.post(actions, {"type": "cancel", "account_id": who})
        assert_names_field(assert_problem(refused, 422, "not_seated"), "body.account_id")
    assert api.get(f"/v1/games/{game['id']}").json()["status"] == "open"
    assert api.post(actions, {"type": "cancel", "account_id": player}).json()["status"] == "cancelled"
    other = api.post("/v1/games", body).json()
    assert api.post(f"/v1/games/{other['id']}/actions", {"type": "cancel"}).json()["status"] == "cancelled"
