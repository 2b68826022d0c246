"""Auth and tenancy: no key, no data; and another tenant's things are exactly as absent as things that never were."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from support.api_checks import assert_problem, database_state
from support.driver import issue_api_key, list_api_keys, revoke_api_key
from support.tenant_api import TenantApi, money_key, new_tenant

# The public fairness link is opened by its token, not a key (tests/dealer/test_dealer_fairness_link.py);
# a tenant's public log is public by design (tests/public_log/test_public_log_api.py).
# `/metrics` counts across tenants, so no tenant's key fits it: it is kept off the public listener instead.
PUBLIC_PATHS = {
    "/healthz",
    "/metrics",
    "/readyz",
    "/v1/fairness/keys",
    "/v1/fairness/proofs/{token}",
    "/v1/logs/{tenant_id}/checkpoint",
    "/v1/logs/{tenant_id}/checkpoints/{tree_size}",
    "/v1/logs/{tenant_id}/consistency",
    "/v1/logs/{tenant_id}/games/{game_id}/inclusion",
    "/verify",
    "/verify.js",
}


@dataclass
class Holdings:
    """What one tenant owns: wallets with money, a game, a table and a journal transaction."""

    api: TenantApi
    vigo: str
    players: list[str]
    game: dict[str, Any]
    table_id: str
    transaction_id: str

    @property
    def account_ids(self) -> set[str]:
        return {self.vigo, *self.players, self.game["pot_account_id"]}


def _holdings(client: TestClient, sessions: sessionmaker[Session], name: str) -> Holdings:
    api = new_tenant(client, sessions, name)
    vigo = api.wallet(100)
    players = [api.wallet(100), api.wallet(100)]
    game = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": players, "stake": 5})
    assert game.status_code == 201, game.text
    table = api.post("/v1/tables", {"account_ids": [vigo, *players], "stake": 5})
    assert table.status_code == 201, table.text
    transactions = api.get(f"/v1/accounts/{vigo}/transactions").json()["data"]
    return Holdings(api, vigo, players, game.json(), table.json()["id"], transactions[0]["transaction_id"])


@pytest.fixture
def two_tenants(client: TestClient, sessions: sessionmaker[Session]) -> tuple[Holdings, Holdings]:
    return _holdings(client, sessions, "Jabba's palace"), _holdings(client, sessions, "Chalmun's cantina")


# --- auth ----------------------------------------------------------------------------------------------


def _private_routes(client: TestClient) -> list[tuple[str, str]]:
    """Every (method, path) the OpenAPI document lists that is not public, with dummy ids in the path."""
    paths: dict[str, dict[str, Any]] = client.get("/openapi.json").json()["paths"]
    return [
        (
            method.upper(),
            path.format(
                account_id="acct_x",
                game_id="game_x",
                table_id="tbl_x",
                endpoint_id="whep_x",
                delivery_id="whdl_x",
            ),
        )
        for path, operations in paths.items()
        if path not in PUBLIC_PATHS
        for method in operations
    ]


def test_every_private_route_needs_a_bearer_key(client: TestClient, sessions: sessionmaker[Session]) -> None:
    routes = _private_routes(client)
    assert len(routes) >= 15  # the inventory itself is right: every /v1 route but the fairness keys
    before = database_state(sessions)
    for method, path in routes:
        response = client.request(method, path, json={"amount": 1})
        problem = assert_problem(response, 401, "unauthorized")
        assert response.headers["www-authenticate"] == "Bearer", (method, path)
        assert problem["instance"] == path
    assert database_state(sessions) == before


def test_public_routes_need_no_key(client: TestClient) -> None:
    assert client.get("/v1/fairness/keys").status_code == 200
    assert client.get("/v1/fairness/proofs/no-such-token-of-32-characters").status_code == 404
    assert client.get("/healthz").status_code == 200
    assert client.get("/v1/logs/tnt_nonesuch/checkpoint").status_code == 404  # no key asked: no such log


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param("Basic dXNlcjpwYXNz", id="basic-scheme"),
        pytest.param("Token {key}", id="token-scheme"),
        pytest.param("{key}", id="no-scheme"),
        pytest.param("Bearer", id="bearer-without-key"),
        pytest.param("Bearer pk_not-a-key-we-issued", id="unknown-key"),
        pytest.param("Bearer {key}x", id="key-with-an-extra-character"),
    ],
)
def test_bad_credentials_are_401(
    client: TestClient, sessions: sessionmaker[Session], authorization: str
) -> None:
    api = new_tenant(client, sessions)
    wallet = api.wallet(10)
    headers = {"Authorization": authorization.format(key=api.api_key)}
    before = database_state(sessions)
    for response in (
        client.get(f"/v1/accounts/{wallet}", headers=headers),
        client.post(f"/v1/accounts/{wallet}/deposits", json={"amount": 5}, headers=headers),
    ):
        assert_problem(response, 401, "unauthorized")
        assert response.headers["www-authenticate"] == "Bearer"
    assert database_state(sessions) == before
    assert api.balance(wallet) == 10  # the right key still works


def test_a_revoked_key_is_401_and_replays_nothing(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = new_tenant(client, sessions)
    spare = issue_api_key(sessions, api.tenant_id)
    wallet = api.wallet(10)
    deposit = api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 5}, headers={"Idempotency-Key": "dep-1"})
    assert deposit.status_code == 201
    game = api.post(
        "/v1/games", {"vigo_account_id": wallet, "player_account_ids": [api.wallet(5)], "stake": 1}
    )
    assert game.status_code == 201, game.text
    # The process now knows the key's tenant (pokna.tenants.authentication): it is a routing hint only.
    key_id = _key_id(sessions, api.tenant_id, exclude=spare.key_id)
    revoke_api_key(sessions, key_id)
    before = database_state(sessions)
    for response in (
        # First: the process still remembers the key's tenant, and a stored answer is there to replay.
        api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 5}, headers={"Idempotency-Key": "dep-1"}),
        api.get(f"/v1/accounts/{wallet}"),
        api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 5}),
        api.post(f"/v1/games/{game.json()['id']}/actions", {"type": "cancel"}),
        api.post(
            f"/v1/games/{game.json()['id']}/actions", {"type": "cancel"}, headers={"Idempotency-Key": "act-1"}
        ),
    ):
        assert_problem(response, 401, "unauthorized")
        assert response.headers["www-authenticate"] == "Bearer"
    assert database_state(sessions) == before
    still = TenantApi(
        client, api.tenant_id, spare.secret
    )  # revoking one key leaves the tenant's others alive
    assert still.balance(wallet) == 15


READS_BESIDE_THE_CHECK = [
    "/v1/games/{game}",
    "/v1/games/{game}/events",
    "/v1/games/{game}/proof",
    "/v1/accounts/{wallet}",
    "/v1/accounts/{wallet}/transactions",
    "/v1/ledger/trial-balance",
    "/v1/ledger/checkpoints",
    "/v1/tables/{table}",
    "/v1/tenant/settings",
    "/v1/webhooks/endpoints",
    "/v1/webhooks/endpoints/{endpoint}",
    "/v1/webhooks/endpoints/{endpoint}/deliveries",
]


@pytest.mark.parametrize("read", READS_BESIDE_THE_CHECK)
def test_a_read_under_a_revoked_keys_remembered_tenant_is_401(
    client: TestClient, sessions: sessionmaker[Session], read: str
) -> None:
    """A read is sent under the tenant the process remembers for the key, beside the key's check
    (pokna.tenants.authentication.read_beside): what it read is not answered when the check finds the key
    revoked."""
    api = new_tenant(client, sessions)
    spare = issue_api_key(sessions, api.tenant_id)
    wallet, player = api.wallet(10), api.wallet(10)
    game = api.post("/v1/games", {"vigo_account_id": wallet, "player_account_ids": [player], "stake": 1})
    table = api.post("/v1/tables", {"account_ids": [wallet, player], "stake": 1})
    endpoint = api.post(
        "/v1/webhooks/endpoints", {"url": "http://127.0.0.1:9/hooks", "event_types": ["game.turn"]}
    )
    ids = {"wallet": wallet, "game": game.json()["id"], "table": table.json()["id"]}
    path = read.format(**ids, endpoint=endpoint.json()["id"])
    assert api.get(path).status_code == 200  # the process now remembers the key's tenant
    revoke_api_key(sessions, _key_id(sessions, api.tenant_id, exclude=spare.key_id))
    assert_problem(api.get(path), 401, "unauthorized")
    assert TenantApi(client, api.tenant_id, spare.secret).get(path).status_code == 200


def _key_id(sessions: sessionmaker[Session], tenant_id: str, *, exclude: str) -> str:
    (key,) = [key for key in list_api_keys(sessions, tenant_id) if key.id != exclude]
    return key.id


# --- tenancy -------------------------------------------------------------------------------------------


def _unknown_like(thing_id: str) -> str:
    """An id of the same kind and shape that nobody has."""
    prefix, _, rest = thing_id.partition("_")
    return f"{prefix}_{'0' * len(rest)}"


def _by_id_requests(h: Holdings) -> list[tuple[str, str, str, str, Any]]:
    """(label, method, path with `{id}`, one of `h`'s ids, body) for every route that takes an id."""
    game_id = h.game["id"]
    return [
        ("account", "GET", "/v1/accounts/{id}", h.vigo, None),
        ("game pot account", "GET", "/v1/accounts/{id}", h.game["pot_account_id"], None),
        ("account transactions", "GET", "/v1/accounts/{id}/transactions", h.vigo, None),
        ("deposit", "POST", "/v1/accounts/{id}/deposits", h.vigo, {"amount": 1}),
        ("withdrawal", "POST", "/v1/accounts/{id}/withdrawals", h.vigo, {"amount": 1}),
        ("game", "GET", "/v1/games/{id}", game_id, None),
        ("game events", "GET", "/v1/games/{id}/events", game_id, None),
        ("game proof", "GET", "/v1/games/{id}/proof", game_id, None),
        ("game action", "POST", "/v1/games/{id}/actions", game_id, {"type": "cancel"}),
        ("table", "GET", "/v1/tables/{id}", h.table_id, None),
        ("table round", "POST", "/v1/tables/{id}/rounds", h.table_id, None),
    ]


def test_another_tenants_things_are_404_exactly_like_unknown_ids(
    two_tenants: tuple[Holdings, Holdings], sessions: sessionmaker[Session]
) -> None:
    owner, stranger = two_tenants
    before = database_state(sessions)
    for label, method, path, thing_id, body in _by_id_requests(owner):
        unknown_id = _unknown_like(thing_id)
        foreign = stranger.api.client.request(
            method, path.format(id=thing_id), json=body, headers={**stranger.api.headers, **money_key()}
        )
        unknown = stranger.api.client.request(
            method, path.format(id=unknown_id), json=body, headers={**stranger.api.headers, **money_key()}
        )
        problem = assert_problem(foreign, 404)
        absent = assert_problem(unknown, 404)
        assert problem["code"] == absent["code"], label
        assert set(problem) == set(absent), label
        assert problem["detail"] == absent["detail"].replace(unknown_id, thing_id), label
        assert foreign.headers.keys() == unknown.headers.keys(), label
    assert database_state(sessions) == before
    for label, method, path, thing_id, body in _by_id_requests(owner):  # ... and every id above is real
        mine = owner.api.client.request(
            method, path.format(id=thing_id), json=body, headers={**owner.api.headers, **money_key()}
        )
        assert mine.status_code in (200, 201), f"{label}: {mine.text}"


def test_another_tenants_accounts_in_a_body_are_refused_like_unknown_ones(
    two_tenants: tuple[Holdings, Holdings], sessions: sessionmaker[Session]
) -> None:
    owner, stranger = two_tenants
    theirs = owner.players[0]
    before = database_state(sessions)

    def game_with(account: str) -> dict[str, Any]:
        return {"vigo_account_id": stranger.vigo, "player_account_ids": [account], "stake": 1}

    def table_with(account: str) -> dict[str, Any]:
        return {"account_ids": [stranger.vigo, account], "stake": 1}

    for path, body_with in (("/v1/games", game_with), ("/v1/tables", table_with)):
        foreign = assert_problem(stranger.api.post(path, body_with(theirs)), 422)
        unknown = assert_problem(stranger.api.post(path, body_with(_unknown_like(theirs))), 422)
        assert foreign["code"] == unknown["code"]
        assert [p["name"] for p in foreign["invalid_params"]] == [
            p["name"] for p in unknown["invalid_params"]
        ]
        assert foreign["detail"] == unknown["detail"].replace(_unknown_like(theirs), theirs)
    assert database_state(sessions) == before


def test_trial_balance_shows_only_the_callers_accounts(two_tenants: tuple[Holdings, Holdings]) -> None:
    for me, other in (two_tenants, two_tenants[::-1]):
        balance = me.api.get("/v1/ledger/trial-balance")
        assert balance.status_code == 200
        lines = {line["account_id"]: line["balance"] for line in balance.json()["accounts"]}
        assert me.account_ids <= set(lines)
        assert not other.account_ids & set(lines)
        assert {lines[account] for account in (me.vigo, *me.players)} == {100}
        assert balance.json()["total"] == 0
        assert sum(lines.values()) == 0  # funding is the other side of the wallets: no other tenant's money


def test_exports_show_only_the_callers_journal(two_tenants: tuple[Holdings, Holdings]) -> None:
    for me, other in (two_tenants, two_tenants[::-1]):
        exports = {
            export_format: me.api.get("/v1/ledger/export", params={"format": export_format})
            for export_format in ("jsonl", "csv", "beancount")
        }
        for export_format, response in exports.items():
            assert response.status_code == 200, export_format
            for account in other.account_ids:
                assert account not in response.text, export_format
            assert other.transaction_id not in response.text, export_format
            assert me.transaction_id in response.text, export_format
        journal = [json.loads(line) for line in exports["jsonl"].text.splitlines() if line]
        chains: dict[int, list[int]] = {}
        for entry in journal:  # each deposit on its wallet's chain
            chains.setdefault(entry["chain"], []).append(entry["seq"])
        assert sum(map(len, chains.values())) == 3  # three deposits, each chain gap-free from 1
        assert all(seqs == list(range(1, len(seqs) + 1)) for seqs in chains.values())
        rows = list(csv.DictReader(io.StringIO(exports["csv"].text)))
        assert {row["account_id"] for row in rows} >= {me.vigo, *me.players}


def test_checkpoints_are_per_tenant(two_tenants: tuple[Holdings, Holdings]) -> None:
    owner, stranger = two_tenants
    taken = owner.api.post("/v1/ledger/checkpoints")
    assert taken.status_code == 201
    assert taken.json()["tenant_id"] == owner.api.tenant_id
    assert stranger.api.get("/v1/ledger/checkpoints").json() == []
    assert [c["hash"] for c in owner.api.get("/v1/ledger/checkpoints").json()] == [taken.json()["hash"]]


def test_another_tenants_transaction_is_no_cursor(two_tenants: tuple[Holdings, Holdings]) -> None:
    owner, stranger = two_tenants
    path = f"/v1/accounts/{stranger.vigo}/transactions"
    foreign = stranger.api.get(path, params={"starting_after": owner.transaction_id})
    unknown = stranger.api.get(path, params={"starting_after": _unknown_like(owner.transaction_id)})
    assert unknown.status_code >= 400
    assert foreign.status_code == unknown.status_code, foreign.text
    assert foreign.json()["code"] == unknown.json()["code"]
