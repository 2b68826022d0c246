"""The hot paths' round trips to PostgreSQL, counted on the wire (issue 24): a game action is at most three
(two without an Idempotency-Key), a keyed deposit or withdrawal three, a game read one, a public log read
one or two, whatever else happens in the request. The app reaches the database through a counting proxy
(tests/support/wire.py), so every driver, every pipeline and every implicit BEGIN or COMMIT counts.

Counted once the connections are warm: psycopg prepares a statement the fifth time a connection runs it,
in a round trip of its own, once per connection (a running service pays it once per statement and
connection, at start); the app keeps one connection per pool here, so the warm-up warms it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from pokna.app import create_app
from pokna.db.engine import make_engine
from pokna.db.types import utc_now
from pokna.dealer.action.locked import Clock
from pokna.dealer.clock_dep import get_clock
from pokna.public_log.sequencer import LogSigner
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from support.game_logs import ORIGIN_PREFIX, open_table, sequence_all
from support.tenant_api import TenantApi, money_key, new_tenant
from support.webhook_worker import fan_out
from support.wire import WireTurns


@pytest.fixture
def counted(tmp_path: Path, database_url: str) -> Iterator[tuple[TestClient, WireTurns]]:
    target = make_url(database_url)
    wire = WireTurns(target.host or "127.0.0.1", target.port or 5432)
    proxied = target.set(host="127.0.0.1", port=wire.port).render_as_string(hide_password=False)
    # One connection kept in each pool: psycopg_pool hands its idle connections out in turn, so with more
    # the warm-up would prepare the statements on some of them only. No overlap after a rotation: the
    # warm-up rotates one endpoint's secret more often than secrets may sign at once within one.
    settings = Settings(
        env=Environment.TEST,
        data_dir=tmp_path / "data",
        database_url=proxied,
        database_pool_size=1,
        webhook_secret_overlap_seconds=0,
    )
    engine = make_engine(proxied, pool_size=1)
    try:
        with TestClient(create_app(settings, Runtime.from_settings(settings))) as client:
            yield client, wire
    finally:
        engine.dispose()
        wire.close()


def _game(api: TenantApi) -> dict[str, Any]:
    vigo, players = api.wallet(500), [api.wallet(500) for _ in range(3)]
    created = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": players, "stake": 5})
    assert created.status_code == 201, created.text
    game: dict[str, Any] = created.json()
    return game


def _next(game: dict[str, Any]) -> dict[str, Any]:
    turn = game["turn"]
    account, allowed = turn["account_ids"][0], turn["allowed_actions"]
    for kind in ("start", "roll", "claim"):
        if kind in allowed:
            return {"type": kind, "account_id": account}
    return {"type": "vote", "account_id": account, "choice": "split"}


@pytest.mark.parametrize("keyed", [False, True], ids=["unkeyed", "keyed"])
def test_a_game_action_is_at_most_three_round_trips(
    counted: tuple[TestClient, WireTurns], sessions: sessionmaker[Session], keyed: bool
) -> None:
    client, wire = counted
    api = new_tenant(client, sessions)
    headers = money_key if keyed else dict
    for _warm_up in range(3):
        game = _game(api)
        while game["status"] not in ("settled", "cancelled"):
            game = api.post(f"/v1/games/{game['id']}/actions", _next(game), headers=headers()).json()
    game = _game(api)
    trips = []
    while game["status"] not in ("settled", "cancelled"):
        wire.take()
        answer = api.post(f"/v1/games/{game['id']}/actions", _next(game), headers=headers())
        assert answer.status_code == 200, answer.text
        trips.append(wire.take())
        game = answer.json()
    limit = 3 if keyed else 2
    assert len(trips) >= 3, trips
    # The action that ends the game (the last) too: its lock read what the proof signs.
    assert max(trips) == limit, trips


def test_a_keyed_deposit_and_withdrawal_are_three_round_trips(
    counted: tuple[TestClient, WireTurns], sessions: sessionmaker[Session]
) -> None:
    client, wire = counted
    api = new_tenant(client, sessions)
    wallet = api.wallet(10)  # opens the funding account: the first movement in a currency does
    for _warm_up in range(6):
        api.deposit(wallet, 1)
        api.withdraw(wallet, 1)
    for move in (api.deposit, api.withdraw, api.deposit):
        wire.take()
        answer = move(wallet, 3)
        assert answer.status_code == 201, answer.text
        assert wire.take() == 3
    key = money_key()
    first = api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 2}, headers=key)
    for _replay in range(3):
        wire.take()
        replay = api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 2}, headers=key)
        assert wire.take() == 1  # the stored answer comes back with the claim's own statement
        assert replay.content == first.content
        assert replay.headers["Idempotent-Replayed"] == "true"


@pytest.mark.parametrize("keyed", [False, True], ids=["unkeyed", "keyed"])
def test_creating_a_game_is_three_round_trips(
    counted: tuple[TestClient, WireTurns], sessions: sessionmaker[Session], keyed: bool
) -> None:
    client, wire = counted
    api = new_tenant(client, sessions)
    headers = money_key if keyed else dict
    seats = [api.wallet(500) for _ in range(4)]
    body = {"vigo_account_id": seats[0], "player_account_ids": seats[1:], "stake": 5}
    for _warm_up in range(6):
        assert api.post("/v1/games", body, headers=headers()).status_code == 201
    for _created in range(3):
        wire.take()
        created = api.post("/v1/games", body, headers=headers())
        assert created.status_code == 201, created.text
        # Authenticate (and claim the key); BEGIN, hold, the wallets and the default rake; the writes, COMMIT.
        assert wire.take() == 3
    if keyed:
        key = money_key()
        first = api.post("/v1/games", body, headers=key)
        wire.take()
        replay = api.post("/v1/games", body, headers=key)
        assert wire.take() == 1
        assert replay.status_code == 201
        assert replay.content == first.content
        assert replay.headers["Idempotent-Replayed"] == "true"


def test_reading_a_game_is_one_round_trip(
    counted: tuple[TestClient, WireTurns], sessions: sessionmaker[Session]
) -> None:
    """The key's check and the read, pipelined: a game, a page of its events, its proof."""
    client, wire = counted
    api = new_tenant(client, sessions)
    game = _game(api)
    reads = [
        f"/v1/games/{game['id']}",
        f"/v1/games/{game['id']}/events?limit=2",
        f"/v1/games/{game['id']}/proof",
    ]
    for _warm_up in range(6):
        for path in reads:
            assert api.get(path).status_code == 200
    trips = {}
    for path in reads:
        wire.take()
        answer = api.get(path)
        assert answer.status_code == 200, answer.text
        trips[path.split("/")[-1].split("?")[0]] = wire.take()
    assert trips == {game["id"]: 1, "events": 1, "proof": 1}


def test_reading_a_game_past_its_deadline_catches_it_up_on_the_same_connection(
    counted: tuple[TestClient, WireTurns], sessions: sessionmaker[Session]
) -> None:
    """The key's check and the read; the catch-up's transaction (BEGIN and the lock, then the write and
    COMMIT); the read again: four round trips, on the one connection the request holds."""
    client, wire = counted
    api = new_tenant(client, sessions)
    late = Clock(now=utc_now() + timedelta(days=1), open_game_ttl=timedelta(minutes=10))
    games = [_game(api) for _ in range(6)]
    client.app.dependency_overrides[get_clock] = lambda: late  # type: ignore[attr-defined]
    for game in games[:-1]:  # warm: each passed deadline caught up by a read
        assert api.get(f"/v1/games/{game['id']}").json()["status"] == "cancelled"
    wire.take()
    answer = api.get(f"/v1/games/{games[-1]['id']}")
    trips = wire.take()
    assert answer.json()["status"] == "cancelled", answer.text  # never started: cancelled at its TTL
    assert trips == 4


def _read_trips(api: TenantApi, wire: WireTurns, reads: list[str]) -> dict[str, int]:
    """Each read's round trips once warm (answered 200)."""
    for _warm_up in range(6):
        for path in reads:
            assert api.get(path).status_code == 200, path
    trips = {}
    for path in reads:
        wire.take()
        answer = api.get(path)
        assert answer.status_code == 200, answer.text
        trips[path] = wire.take()
    return trips


def test_the_ledger_reads_are_one_round_trip(
    counted: tuple[TestClient, WireTurns], sessions: sessionmaker[Session]
) -> None:
    """The key's check and the read, pipelined, as a game's: an account, a page of its postings (the
    first, and the next from a cursor, which is checked in the same trip), the trial balance, the
    checkpoints."""
    client, wire = counted
    api = new_tenant(client, sessions)
    wallet = api.wallet(10)
    assert api.deposit(wallet, 2).status_code == 201
    assert api.post("/v1/ledger/checkpoints").status_code == 201
    cursor = api.get(f"/v1/accounts/{wallet}/transactions?limit=1").json()["next_cursor"]
    reads = [
        f"/v1/accounts/{wallet}",
        f"/v1/accounts/{wallet}/transactions?limit=1",
        f"/v1/accounts/{wallet}/transactions?limit=1&starting_after={cursor}",
        "/v1/ledger/trial-balance",
        "/v1/ledger/checkpoints",
    ]
    assert _read_trips(api, wire, reads) == dict.fromkeys(reads, 1)


def test_reading_a_table_is_one_round_trip(
    counted: tuple[TestClient, WireTurns], sessions: sessionmaker[Session]
) -> None:
    """The key's check, the table and its rounds with their seats, pipelined."""
    client, wire = counted
    api = new_tenant(client, sessions)
    table = api.post("/v1/tables", {"account_ids": [api.wallet(50) for _ in range(3)], "stake": 5})
    assert table.status_code == 201, table.text
    path = f"/v1/tables/{table.json()['id']}"
    assert api.post(f"{path}/rounds").status_code == 201
    assert _read_trips(api, wire, [path]) == {path: 1}


def test_reading_the_tenant_settings_is_one_round_trip(
    counted: tuple[TestClient, WireTurns], sessions: sessionmaker[Session]
) -> None:
    client, wire = counted
    api = new_tenant(client, sessions)
    assert _read_trips(api, wire, ["/v1/tenant/settings"]) == {"/v1/tenant/settings": 1}


def test_reading_webhook_endpoints_and_deliveries_is_one_round_trip(
    counted: tuple[TestClient, WireTurns], sessions: sessionmaker[Session]
) -> None:
    """The endpoints, one endpoint, its deliveries (the first page, the next from a cursor, by status):
    each the key's check and the read (with the endpoint's own check) pipelined."""
    client, wire = counted
    api = new_tenant(client, sessions)
    body = {"url": "http://127.0.0.1:9/hooks", "event_types": ["ledger.deposit.posted"]}
    made = api.post("/v1/webhooks/endpoints", body)
    assert made.status_code == 201, made.text
    path = f"/v1/webhooks/endpoints/{made.json()['id']}"
    api.wallet(5), api.wallet(5)
    runtime: Runtime = client.app.state.runtime  # type: ignore[attr-defined]
    fan_out(runtime)  # the worker's first step: the deposits' events become deliveries
    cursor = api.get(f"{path}/deliveries?limit=1").json()["next_cursor"]
    reads = [
        "/v1/webhooks/endpoints",
        path,
        f"{path}/deliveries?limit=1",
        f"{path}/deliveries?limit=1&starting_after={cursor}&status=pending",
    ]
    assert _read_trips(api, wire, reads) == dict.fromkeys(reads, 1)


@pytest.mark.parametrize("keyed", [False, True], ids=["unkeyed", "keyed"])
def test_the_webhook_writes_are_three_round_trips(
    counted: tuple[TestClient, WireTurns], sessions: sessionmaker[Session], keyed: bool
) -> None:
    """Each write of the webhooks' admin side, in the keyed transaction: (the key's claim;) BEGIN, the
    hold (or the key's check) and the endpoint or delivery locked; the write, the answer stored, COMMIT. A
    replay is the claim's one round trip."""
    client, wire = counted
    api = new_tenant(client, sessions)
    headers = money_key if keyed else dict
    body = {"url": "http://127.0.0.1:9/hooks", "event_types": ["ledger.deposit.posted"]}

    def send(method: str, path: str, json: Any = None, key: dict[str, str] | None = None) -> Any:
        sent = {**api.headers, **(key or headers())}
        return client.request(method, f"/v1/webhooks/endpoints{path}", json=json, headers=sent)

    endpoints = [send("POST", "", body).json()["id"] for _ in range(12)]
    api.wallet(5)
    runtime: Runtime = client.app.state.runtime  # type: ignore[attr-defined]
    fan_out(runtime)  # the deposit's event becomes a delivery to each endpoint
    kept = endpoints[0]
    delivery = api.get(f"/v1/webhooks/endpoints/{kept}/deliveries").json()["data"][0]["id"]
    writes = {
        "create": ("POST", "", body),
        "change": ("PATCH", f"/{kept}", {"description": "turns"}),
        "rotate": ("POST", f"/{kept}/rotate-secret", None),
        "retry": ("POST", f"/{kept}/deliveries/{delivery}/retry", None),
    }
    for _warm_up in range(6):
        for method, path, json in writes.values():
            assert send(method, path, json).status_code in (200, 201)
        assert send("DELETE", f"/{endpoints.pop()}").status_code == 200
    trips = {}
    for name, (method, path, json) in writes.items():
        wire.take()
        answer = send(method, path, json)
        assert answer.status_code in (200, 201), answer.text
        trips[name] = wire.take()
    wire.take()
    assert send("DELETE", f"/{endpoints.pop()}").status_code == 200
    trips["delete"] = wire.take()
    assert trips == dict.fromkeys([*writes, "delete"], 3 if keyed else 2)
    if keyed:
        key = money_key()
        first = send("POST", f"/{kept}/rotate-secret", key=key)
        wire.take()
        replay = send("POST", f"/{kept}/rotate-secret", key=key)
        assert wire.take() == 1
        assert replay.content == first.content
        assert replay.headers["Idempotent-Replayed"] == "true"


def test_public_log_reads_need_no_more_round_trips_than_their_reads(
    counted: tuple[TestClient, WireTurns], sessions: sessionmaker[Session]
) -> None:
    """No key to check, no transaction to open: a checkpoint is one statement; a consistency proof one round
    trip (the log's size and the nodes, pipelined); an inclusion proof two (the leaf and the size, then the
    nodes); a game's public link four (its tenant by token; the game and its seats; the latest checkpoint
    and the leaf; the nodes)."""
    client, wire = counted
    table = open_table(client, sessions)
    games = table.finish_games(3)
    runtime: Runtime = client.app.state.runtime  # type: ignore[attr-defined]
    sequence_all(runtime.aio, LogSigner(ORIGIN_PREFIX, Ed25519PrivateKey.generate()))
    link = table.api.ok(table.api.get(f"/v1/games/{games[0]}"))["fairness"]["public_url"]
    base = f"/v1/logs/{table.tenant_id}"
    reads = {
        "checkpoint": f"{base}/checkpoint",
        "checkpoint of a size": f"{base}/checkpoints/3",
        "consistency": f"{base}/consistency?first=1&second=3",
        "inclusion": f"{base}/games/{games[1]}/inclusion",
        "link": link,
    }
    for _warm_up in range(6):
        for path in reads.values():
            assert client.get(path).status_code == 200
    trips = {}
    for name, path in reads.items():
        wire.take()
        answer = client.get(path)
        assert answer.status_code == 200, answer.text
        trips[name] = wire.take()
    assert client.get(link).json()["public_log"]["status"] == "logged"
    assert trips == {"checkpoint": 1, "checkpoint of a size": 1, "consistency": 1, "inclusion": 2, "link": 4}


@pytest.mark.parametrize("keyed", [False, True], ids=["unkeyed", "keyed"])
def test_the_admin_writes_are_a_claim_and_a_transaction(
    counted: tuple[TestClient, WireTurns], sessions: sessionmaker[Session], keyed: bool
) -> None:
    """Opening a wallet, taking a checkpoint, setting the tenant's defaults, creating a table: with a key
    its claim (and the key's check), then BEGIN, the hold and the reads, then the writes, the stored answer
    and COMMIT; without one the key's check rides with the reads. A replay is the claim alone."""
    client, wire = counted
    api = new_tenant(client, sessions)
    headers = money_key if keyed else dict
    seats = [api.wallet(50) for _ in range(3)]
    writes: dict[str, tuple[str, str, Any]] = {
        "wallet": ("POST", "/v1/accounts", {}),
        "checkpoint": ("POST", "/v1/ledger/checkpoints", None),
        "settings": ("PUT", "/v1/tenant/settings", {"rake": {"bps": 100, "cap": 5}}),
        "table": ("POST", "/v1/tables", {"account_ids": seats, "stake": 5}),
    }

    def send(method: str, path: str, body: Any, sent: dict[str, str]) -> Any:
        answer = api.put(path, body, headers=sent) if method == "PUT" else api.post(path, body, headers=sent)
        assert answer.status_code in (200, 201), answer.text
        return answer

    for _warm_up in range(6):
        for method, path, body in writes.values():
            send(method, path, body, headers())
    trips = {}
    for name, (method, path, body) in writes.items():
        wire.take()
        send(method, path, body, headers())
        trips[name] = wire.take()
    assert trips == dict.fromkeys(writes, 3 if keyed else 2)
    if keyed:
        for name, (method, path, body) in writes.items():
            key = money_key()
            first = send(method, path, body, key)
            wire.take()
            replay = send(method, path, body, key)
            assert wire.take() == 1, name
            assert replay.json() == first.json()
            assert replay.headers["Idempotent-Replayed"] == "true"
