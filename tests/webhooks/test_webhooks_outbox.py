"""The transactional outbox, on both backends: each change records its events in its own transaction, so
a committed change always has them and a refused or rolled-back one has none; every payload is its
documented model."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any, cast

import psycopg
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

import pokna.dealer.creating
from pokna.app.webhook_events import EXAMPLES
from pokna.db.models.webhook import WebhookEvent
from pokna.db.types import utc_now
from pokna.dealer import service as dealer
from pokna.dealer.clock_dep import get_clock
from pokna.outbox import EVENT_MODELS
from pokna.runtime import Runtime
from support.acting import create_game
from support.game_play import Api, play, random_policy
from support.tenant_api import new_tenant

TIMEOUT = 30


class Time:
    def __init__(self, now: datetime, open_game_ttl: timedelta) -> None:
        self.now = now
        self.open_game_ttl = open_game_ttl

    def clock(self) -> dealer.Clock:
        return dealer.Clock(now=self.now, open_game_ttl=self.open_game_ttl)


@pytest.fixture
def time(client: TestClient, runtime: Runtime) -> Iterator[Time]:
    app = cast(FastAPI, client.app)
    now = Time(utc_now().replace(microsecond=0), timedelta(seconds=runtime.settings.open_game_ttl_seconds))
    app.dependency_overrides[get_clock] = now.clock
    yield now
    app.dependency_overrides.pop(get_clock, None)


def outbox(sessions: sessionmaker[Session], key: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(type, body) of every event recorded, in order; of one game or wallet if `key` is given."""
    with sessions() as session:
        query = select(WebhookEvent).order_by(WebhookEvent.seq)
        if key is not None:
            query = query.where(WebhookEvent.ordering_key == key)
        rows = session.scalars(query).all()
        return [
            (row.type, EVENT_MODELS[row.type].model_validate_json(row.body).model_dump(mode="json"))
            for row in rows
        ]


def test_a_game_records_its_turns_its_start_a_timeout_and_its_end(
    client: TestClient, sessions: sessionmaker[Session], time: Time
) -> None:
    api = Api(client, new_tenant(client, sessions).api_key)
    vigo, first, second = api.wallet(100), api.wallet(100), api.wallet(100)
    game = api.create_game(vigo, [first, second], stake=5, turn_timeout_seconds=TIMEOUT)
    game = api.ok(api.act(game["id"], {"type": "start", "account_id": vigo}))
    waiting = game["turn"]
    time.now = datetime.fromisoformat(waiting["deadline_at"]) + timedelta(seconds=1)
    api.game(game["id"])  # the read applies the passed deadline

    events = outbox(sessions, game["id"])
    types = [event_type for event_type, _ in events]
    assert types[:5] == ["game.created", "game.turn", "game.started", "game.turn", "game.turn_timed_out"]
    created, start_turn, started, turn, timed_out = (body["data"] for _, body in events[:5])
    assert created["account_ids"] == [vigo, first, second]
    assert (start_turn["account_ids"], start_turn["allowed_actions"]) == (
        [vigo],
        ["set_client_seed", "start", "cancel"],
    )
    assert started["pot"] == game["pot"] > 0
    assert {key: turn[key] for key in ("account_ids", "allowed_actions", "default_action")} == {
        "account_ids": waiting["account_ids"],
        "allowed_actions": waiting["allowed_actions"],
        "default_action": "roll",
    }
    assert (timed_out["account_ids"], timed_out["applied_action"]) == (waiting["account_ids"], "roll")
    assert datetime.fromisoformat(timed_out["deadline_at"]) == datetime.fromisoformat(waiting["deadline_at"])
    assert types[5] in {"game.turn", "game.settled"}


def test_a_client_seed_announces_the_turn_again_with_the_version_it_made(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """An integrator acting on the last `game.turn` it received, with that event's `version` as
    `expected_version`, must not be refused: the version a client seed makes is announced too."""
    api = Api(client, new_tenant(client, sessions).api_key)
    vigo, player = api.wallet(100), api.wallet(100)
    game = api.create_game(vigo, [player], stake=5)
    seeded = api.ok(
        api.act(game["id"], {"type": "set_client_seed", "account_id": player, "client_seed": "kessel-run"})
    )
    assert seeded["version"] == game["version"] + 1

    events = outbox(sessions, game["id"])
    assert [event_type for event_type, _ in events] == ["game.created", "game.turn", "game.turn"]
    created, first_turn, seeded_turn = (body["data"] for _, body in events)
    assert created["version"] == first_turn["version"] == game["version"]
    assert seeded_turn["version"] == seeded["version"]
    assert (seeded_turn["account_ids"], seeded_turn["allowed_actions"]) == (
        [vigo],
        ["set_client_seed", "start", "cancel"],
    )

    last_turn = seeded_turn
    start = {"type": "start", "account_id": last_turn["account_ids"][0]}
    started = api.ok(api.act(game["id"], {**start, "expected_version": last_turn["version"]}))
    assert started["status"] == "in_progress"


def test_a_game_never_started_records_its_cancellation_at_the_deadline(
    client: TestClient, sessions: sessionmaker[Session], time: Time
) -> None:
    api = Api(client, new_tenant(client, sessions).api_key)
    game = api.create_game(api.wallet(10), [api.wallet(10)], stake=5)
    time.now += time.open_game_ttl + timedelta(seconds=1)
    assert api.game(game["id"])["status"] == "cancelled"
    events = outbox(sessions, game["id"])
    assert [event_type for event_type, _ in events] == [
        "game.created",
        "game.turn",
        "game.turn_timed_out",
        "game.cancelled",
    ]
    assert events[2][1]["data"]["applied_action"] == "cancel"
    assert (events[3][1]["data"]["reason"], events[3][1]["data"]["payouts"]) == ("cancelled", [])


def test_a_refused_or_rolled_back_change_records_nothing(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = new_tenant(client, sessions)
    api = Api(client, tenant.api_key)
    vigo, player = api.wallet(100), api.wallet(100)
    game = api.create_game(vigo, [player], stake=5)
    before = outbox(sessions)

    assert api.act(game["id"], {"type": "roll", "account_id": player}).status_code == 409  # not started
    assert api.withdraw(player, 101).status_code == 409
    assert api.deposit(player, 0).status_code == 422
    assert api.post(f"/v1/accounts/{player}/deposits", {"amount": 7}).status_code == 400  # no key
    clock = dealer.Clock(now=utc_now(), open_game_ttl=timedelta(minutes=10))

    # A creation whose transaction fails after game_write() has recorded its events (the same statement
    # goes on to divide by zero): the game and its events are rolled back together.
    monkeypatch.setattr(pokna.dealer.creating, "GAME_WRITE", "SELECT game_write(%s, %s::json), 1 / 0")
    with pytest.raises(psycopg.errors.DivisionByZero):
        create_game(runtime, clock, tenant.tenant_id, dealer.NewGame(vigo, [player], 5))
    assert outbox(sessions) == before
    monkeypatch.undo()
    create_game(runtime, clock, tenant.tenant_id, dealer.NewGame(vigo, [player], 5))
    assert sorted(event_type for event_type, _ in outbox(sessions)[len(before) :]) == [
        "game.created",
        "game.turn",
    ]


def test_a_replayed_deposit_records_its_event_once(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    tenant = new_tenant(client, sessions)
    api = Api(client, tenant.api_key)
    wallet = api.wallet()
    for _ in range(2):
        answer = api.post(f"/v1/accounts/{wallet}/deposits", {"amount": 9}, idempotency_key="top-up-1")
        assert answer.status_code == 201
    assert api.deposit(wallet, 4).status_code == 201  # under a key of its own: a deposit of its own
    events = outbox(sessions, wallet)
    assert [(body["type"], body["data"]["amount"], body["data"]["balance"]) for _, body in events] == [
        ("ledger.deposit.posted", 9, 9),
        ("ledger.deposit.posted", 4, 13),
    ]


def test_every_event_of_random_games_is_its_documented_model(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = Api(client, new_tenant(client, sessions).api_key)
    rng = random.Random(14)
    for _ in range(4):
        wallets = [api.wallet(500) for _ in range(4)]
        play([api], api.create_game(wallets[0], wallets[1:], stake=5), random_policy(rng, cancel_chance=0.2))
    recorded = outbox(sessions)  # each body parsed by its type's model (outbox() validates)
    assert {event_type for event_type, _ in recorded} >= {"game.created", "game.turn", "game.started"}
    assert all(body["type"] == event_type for event_type, body in recorded)


@pytest.mark.parametrize("event_type", sorted(EVENT_MODELS))
def test_each_documented_example_is_a_valid_event(event_type: str) -> None:
    message = {"type": event_type, "timestamp": "2026-12-01T14:00:00Z", "data": EXAMPLES[event_type]}
    assert EVENT_MODELS[event_type].model_validate(message).model_dump(mode="json")["data"].keys() == (
        EXAMPLES[event_type].keys()
    )
