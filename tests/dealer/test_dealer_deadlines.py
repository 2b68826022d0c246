"""Deadlines: whoever touches a game after a deadline makes the default action happen,
each at its own deadline, and `pokna sweep` does the same for games nobody touches.

Time is the request's `Clock` dependency, overridden here; `pokna sweep` uses the real clock, so the games it
finds due were created with the overridden clock a day in the past.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

import pokna.cli.sweep  # noqa: F401  (registers `sweep`)
from pokna.api.idempotency import request_fingerprint
from pokna.cli.app import app as pokna_cli
from pokna.db.models.idempotency import IdempotencyRecord
from pokna.db.models.ledger import JournalTransaction
from pokna.db.models.tenant import Tenant
from pokna.db.types import utc_now
from pokna.dealer.clock_dep import get_clock
from pokna.dealer.service import Clock
from pokna.idempotency.service import RETENTION
from pokna.runtime import Runtime
from pokna.settings import Settings, get_settings
from pokna_verify.fairness.protocol import server_seed_hash
from support.api_checks import database_state
from support.game_play import FINAL, Api, Game, check_finished_game, new_tenant_key, random_policy, verify
from support.steering import steer
from support.sweeping import swept

TIMEOUT = 60
STAKE = 5
FUNDS = 100


@dataclass
class Time:
    """The service's now, as every request will see it."""

    now: datetime
    open_game_ttl: timedelta

    def clock(self) -> Clock:
        return Clock(now=self.now, open_game_ttl=self.open_game_ttl)

    def at(self, moment: datetime) -> None:
        self.now = moment


@pytest.fixture
def time(client: TestClient, settings: Settings) -> Iterator[Time]:
    app = cast(FastAPI, client.app)
    now = Time(utc_now().replace(microsecond=0), timedelta(seconds=settings.open_game_ttl_seconds))
    app.dependency_overrides[get_clock] = now.clock
    yield now
    app.dependency_overrides.pop(get_clock, None)


@dataclass
class Seats:
    api: Api
    runtime: Runtime
    sessions: sessionmaker[Session]
    wallets: list[str]
    deposited: int

    def game(self, players: int, **terms: Any) -> Game:
        return self.api.create_game(
            self.wallets[0], self.wallets[1 : players + 1], stake=STAKE, turn_timeout_seconds=TIMEOUT, **terms
        )

    def steer(self, game: Game, colors: Sequence[str]) -> Game:
        """Choose the client seeds so the first rolls come out in `colors` (the test plays the operator)."""
        return steer(self.api, self.sessions, self.runtime, game, colors)

    def act(self, game: Game, kind: str, seat: int, **extra: Any) -> Game:
        body = {"type": kind, "account_id": game["seats"][seat]["account_id"], **extra}
        acted: Game = self.api.ok(self.api.act(game["id"], body))
        return acted

    def balances(self) -> list[int]:
        return [self.api.balance(wallet) for wallet in self.wallets]

    def assert_books_sound(self, games: Sequence[Game]) -> None:
        """Money neither appears nor vanishes: wallets plus pots hold what was deposited; trial balance 0."""
        pots = sum(self.api.balance(game["pot_account_id"]) for game in games)
        assert sum(self.balances()) + pots == self.deposited
        assert self.api.trial_balance_total() == 0


@pytest.fixture
def seats(client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, time: Time) -> Seats:
    api = Api(client, new_tenant_key(sessions))
    return Seats(api, runtime, sessions, [api.wallet(FUNDS) for _ in range(6)], FUNDS * 6)


def moment(value: str) -> datetime:
    return datetime.fromisoformat(value)


def deadline(game: Game) -> datetime:
    return moment(game["turn"]["deadline_at"])


def timeouts(seats: Seats, game_id: str) -> list[dict[str, Any]]:
    return [event for event in seats.api.events(game_id) if event["kind"] == "timed_out"]


# --- one deadline at a time -------------------------------------------------------------------------------


def test_a_roll_turn_past_its_deadline_is_rolled_by_the_next_get(seats: Seats, time: Time) -> None:
    game = seats.act(seats.game(3), "start", 0)
    assert deadline(game) == time.now + timedelta(seconds=TIMEOUT)
    time.at(deadline(game) - timedelta(seconds=1))
    assert seats.api.game(game["id"])["version"] == game["version"]

    time.at(deadline(game))
    later = seats.api.game(game["id"])
    assert later["version"] == game["version"] + 1
    assert later["fairness"]["next_nonce"] == 2
    assert later["turn"]["seats"] == [2]
    assert deadline(later) == deadline(game) + timedelta(seconds=TIMEOUT)
    [timed_out] = timeouts(seats, game["id"])
    assert timed_out["data"] == {
        "kind": "timed_out",
        "phase": "seeking",
        "seats": [1],
        "default_action": "roll",
    }
    assert moment(timed_out["occurred_at"]) == deadline(game)
    rolled = [event for event in seats.api.events(game["id"]) if event["kind"] == "rolled"]
    assert [(event["data"]["nonce"], event["data"]["seat"]) for event in rolled] == [(0, 0), (1, 1)]


def test_a_roll_sent_after_its_deadline_finds_the_clock_rolled_first(seats: Seats, time: Time) -> None:
    game = seats.act(seats.game(3), "start", 0)
    time.at(deadline(game) + timedelta(seconds=5))
    late = seats.api.act(game["id"], {"type": "roll", "account_id": game["seats"][1]["account_id"]})
    assert late.status_code == 409, late.text
    assert late.json()["code"] == "not_your_turn"
    assert late.json()["game"]["turn"]["seats"] == [2]
    first = game["seats"][1]["account_id"]
    assert late.json()["timed_out"] == [
        {
            "deadline_at": game["turn"]["deadline_at"],
            "phase": "seeking",
            "account_ids": [first],
            "applied": "roll",
        }
    ]
    assert late.json()["detail"].startswith(
        f"the turn timed out before this action (applied: roll for {first} at {game['turn']['deadline_at']}); "
    )
    assert game["turn"]["deadline_at"].endswith("Z")
    assert len(timeouts(seats, game["id"])) == 1


def _interrupted_attempt(seats: Seats, game: Game, key: str, body: dict[str, Any], began: datetime) -> None:
    """What a request cut off by a failure leaves: its key claimed at `began`, never completed."""
    path = f"/v1/games/{game['id']}/actions"
    with seats.sessions.begin() as session:
        tenant_id = session.scalars(select(Tenant.id)).one()
    with seats.sessions.begin() as session:
        session.add(
            IdempotencyRecord(
                tenant_id=tenant_id,
                key=key,
                request_fingerprint=request_fingerprint("POST", path, json.dumps(body).encode()),
                claim_token="token-of-a-dead-request",
                created_at=began,
                expires_at=utc_now() + RETENTION,
            )
        )


def test_an_action_in_flight_when_the_service_failed_applies_when_retried_after_its_deadline(
    seats: Seats, time: Time
) -> None:
    time.at(utc_now() - timedelta(minutes=10))  # claims are stamped with the real clock: play in its past
    game = seats.act(seats.game(3), "start", 0)
    roll = {"type": "roll", "account_id": game["seats"][1]["account_id"]}
    _interrupted_attempt(seats, game, "roll-1", roll, began=deadline(game) - timedelta(seconds=2))
    time.at(deadline(game) + timedelta(seconds=8))  # the outage, then the client's retry
    retried = seats.api.act(game["id"], roll, idempotency_key="roll-1")
    assert retried.status_code == 200, retried.text
    assert [(item["seat"], item["nonce"]) for item in retried.json()["rolls"]] == [(1, 1)]
    assert timeouts(seats, game["id"]) == []
    assert deadline(retried.json()) == time.now + timedelta(seconds=TIMEOUT)

    # An attempt that began after its deadline was late anyway: the clock rolled first.
    later = seats.act(seats.game(3), "start", 0)
    late_roll = {"type": "roll", "account_id": later["seats"][1]["account_id"]}
    _interrupted_attempt(seats, later, "roll-2", late_roll, began=deadline(later) + timedelta(seconds=1))
    time.at(deadline(later) + timedelta(seconds=8))
    refused = seats.api.act(later["id"], late_roll, idempotency_key="roll-2")
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "not_your_turn"
    assert len(timeouts(seats, later["id"])) == 1


def test_a_refusal_with_no_deadline_passed_says_nothing_of_timeouts(seats: Seats, time: Time) -> None:
    game = seats.act(seats.game(3), "start", 0)
    early = seats.api.act(game["id"], {"type": "roll", "account_id": game["seats"][2]["account_id"]})
    assert early.status_code == 409, early.text
    assert "timed_out" not in early.json()
    assert "timed out" not in early.json()["detail"]


def test_a_lone_survivor_past_the_deadline_claims(seats: Seats, time: Time) -> None:
    game = seats.steer(seats.game(3), ["red", "red", "blue", "blue"])
    for seat in (0, 1, 2, 3):
        game = seats.act(game, "start" if seat == 0 else "roll", seat)
    assert game["phase"] == "lone_survivor"
    assert game["pot"] == 3 * STAKE
    time.at(deadline(game))
    final = seats.api.game(game["id"])
    assert final["status"] == "settled"
    assert final["outcome"] == {
        "reason": "claimed",
        "payouts": [{"seat": 1, "amount": 3 * STAKE, "account_id": seats.wallets[1]}],
    }
    assert final["pot"] == 0
    assert seats.balances()[:4] == [FUNDS, FUNDS + 2 * STAKE, FUNDS - STAKE, FUNDS - STAKE]
    check_finished_game(seats.api, seats.sessions, game["id"], seats.api.key_ring())
    seats.assert_books_sound([final])


def test_an_unanswered_vote_splits(seats: Seats, time: Time) -> None:
    game = seats.steer(seats.game(3), ["red", "red", "red", "red"])
    for seat in (0, 1, 2, 3):
        game = seats.act(game, "start" if seat == 0 else "roll", seat)
    assert game["phase"] == "voting"
    assert game["pot"] == 6 * STAKE
    time.at(time.now + timedelta(seconds=30))
    game = seats.act(game, "vote", 2, choice="split")
    assert deadline(game) == time.now + timedelta(seconds=TIMEOUT)
    time.at(deadline(game))
    final = seats.api.game(game["id"])
    assert final["status"] == "settled"
    assert final["outcome"]["reason"] == "split"
    assert [seat["voted"] for seat in final["seats"][1:4]] == [True, True, True]
    [timed_out] = timeouts(seats, game["id"])
    assert timed_out["data"]["seats"] == [1, 3]
    assert timed_out["data"]["default_action"] == "split"
    assert moment(timed_out["occurred_at"]) == deadline(game)
    assert seats.balances()[:4] == [FUNDS - 3 * STAKE, FUNDS + STAKE, FUNDS + STAKE, FUNDS + STAKE]
    check_finished_game(seats.api, seats.sessions, game["id"], seats.api.key_ring())
    seats.assert_books_sound([final])


def test_a_game_never_started_is_cancelled_after_the_open_ttl(seats: Seats, time: Time) -> None:
    created_at = time.now
    game = seats.game(4)
    assert deadline(game) == created_at + time.open_game_ttl
    time.at(time.now + timedelta(seconds=10))
    game = seats.act(game, "set_client_seed", 2, client_seed="bib-fortuna")
    assert deadline(game) == created_at + time.open_game_ttl  # choosing a seed does not buy time

    time.at(created_at + time.open_game_ttl - timedelta(seconds=1))
    assert seats.api.game(game["id"])["status"] == "open"
    time.at(created_at + time.open_game_ttl)
    proof = seats.api.proof(game["id"])
    final = seats.api.game(game["id"])
    assert final["status"] == "cancelled"
    assert moment(final["ended_at"]) == created_at + time.open_game_ttl
    assert final["started_at"] is None
    assert final["turn"] is None
    assert final["fairness"]["server_seed"] == proof["server_seed"]
    assert server_seed_hash(proof["server_seed"]) == game["fairness"]["server_seed_hash"]
    assert proof["client_seeds"][2]["client_seed"] == "bib-fortuna"
    assert proof["rolls"] == []
    assert proof["transfers"] == []
    assert proof["outcome"] == {"reason": "cancelled", "payouts": []}
    with seats.sessions() as session:
        posted = session.scalar(select(func.count()).where(JournalTransaction.reference == game["id"]))
    assert posted == 0
    assert seats.balances() == [FUNDS] * len(seats.wallets)
    report = verify(proof, seats.api.key_ring(), receipt=game["fairness"]["commitment"])
    assert report.valid, report.to_json()
    check_finished_game(seats.api, seats.sessions, game["id"], seats.api.key_ring())


# --- many deadlines behind ----------------------------------------------------------------------------------


def test_an_abandoned_game_catches_up_in_one_touch_each_timeout_at_its_own_deadline(
    seats: Seats, time: Time
) -> None:
    started_at = time.now
    game = seats.act(seats.game(5), "start", 0)
    time.at(started_at + timedelta(days=1))
    final = seats.api.game(game["id"])
    assert final["status"] == "settled"
    events = seats.api.events(game["id"])
    timed_out = [event for event in events if event["kind"] == "timed_out"]
    assert len(timed_out) >= 2
    expected = [started_at + timedelta(seconds=TIMEOUT * k) for k in range(1, len(timed_out) + 1)]
    assert [moment(event["occurred_at"]) for event in timed_out] == expected
    assert moment(final["ended_at"]) == expected[-1]
    # Every event of a timeout happened at that deadline, not when the game was finally touched.
    assert all(moment(event["occurred_at"]) <= expected[-1] for event in events)
    assert final["version"] == game["version"] + len(timed_out)
    check_finished_game(seats.api, seats.sessions, game["id"], seats.api.key_ring())
    seats.assert_books_sound([final])


def test_an_abandoned_open_game_is_cancelled_at_its_ttl_not_when_found(seats: Seats, time: Time) -> None:
    created_at = time.now
    game = seats.game(2)
    time.at(created_at + timedelta(days=3))
    final = seats.api.game(game["id"])
    assert final["status"] == "cancelled"
    assert moment(final["ended_at"]) == created_at + time.open_game_ttl
    [timed_out] = timeouts(seats, game["id"])
    assert timed_out["data"]["default_action"] == "cancel"


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_any_mix_of_actions_and_timeouts_ends_with_the_pot_empty(seats: Seats, time: Time, seed: int) -> None:
    """Random decisions, and at random points everyone goes quiet for one or several deadlines."""
    rng = random.Random(seed)
    decide = random_policy(rng, cancel_chance=0.1, roll_again_chance=0.4)
    players = rng.randint(1, 5)
    game = seats.game(players)
    games = [game]
    for _ in range(300):
        if game["status"] in FINAL:
            break
        if rng.random() < 0.35:
            time.at(deadline(game) + timedelta(seconds=rng.choice((0, 1, TIMEOUT, 3 * TIMEOUT + 7))))
            touched = seats.api.game(game["id"])
            assert touched["version"] > game["version"]
            game = touched
        else:
            time.at(time.now + timedelta(seconds=rng.randint(0, TIMEOUT - 1)))
            if game["turn"]["deadline_at"] is not None and time.now >= deadline(game):
                time.at(deadline(game) - timedelta(seconds=1))
            game = seats.api.ok(seats.api.act(game["id"], decide(game)))
    assert game["status"] in FINAL
    final = check_finished_game(seats.api, seats.sessions, game["id"], seats.api.key_ring())
    assert final["pot"] == 0
    seats.assert_books_sound(games)


def test_dealing_the_next_round_after_the_last_one_timed_out(seats: Seats, time: Time) -> None:
    """The lazy-deadline rule says whoever touches a game after its deadline makes it happen; dealing the
    table's next round touches the last round, so it must find that round over, not in progress."""
    table = seats.api.ok(
        seats.api.post(
            "/v1/tables", {"account_ids": seats.wallets[:3], "stake": STAKE, "turn_timeout_seconds": TIMEOUT}
        ),
        201,
    )
    first = seats.api.ok(seats.api.post(f"/v1/tables/{table['id']}/rounds"), 201)
    first = seats.act(first, "start", 0)
    time.at(time.now + timedelta(days=1))
    second = seats.api.post(f"/v1/tables/{table['id']}/rounds")
    assert second.status_code == 201, second.text
    assert seats.api.game(first["id"])["status"] == "settled"
    assert second.json()["round_number"] == 2


# --- pokna sweep ----------------------------------------------------------------------------------------------


@pytest.fixture
def cli_env(database_url: str, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("POKNA_DATABASE_URL", database_url)
    monkeypatch.setenv("POKNA_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("POKNA_ENV", "test")
    get_settings.cache_clear()
    yield settings.data_dir
    get_settings.cache_clear()


@pytest.mark.citus
def test_pokna_sweep_times_out_every_due_game_and_purges_expired_idempotency_records(
    seats: Seats, time: Time, cli_env: Path
) -> None:
    real_now = time.now
    time.at(real_now - timedelta(days=1))
    never_started = seats.game(3)
    seeking = seats.act(seats.game(4), "start", 0)
    lone = seats.steer(seats.game(2), ["blue", "blue", "red"])
    for seat in (0, 1, 2):
        lone = seats.act(lone, "start" if seat == 0 else "roll", seat)
    assert lone["phase"] == "lone_survivor"
    due = [never_started, seeking, lone]

    time.at(real_now)
    fresh_open = seats.game(2)
    fresh_started = seats.act(seats.game(3), "start", 0)
    deposit = f"/v1/accounts/{seats.wallets[5]}/deposits"
    for key in ("old", "recent"):
        assert seats.api.post(deposit, {"amount": 1}, idempotency_key=key).status_code == 201
        seats.deposited += 1
    with seats.sessions.begin() as session:
        session.execute(
            update(IdempotencyRecord)
            .where(IdempotencyRecord.key == "old")
            .values(expires_at=utc_now() - timedelta(seconds=1))
        )

    result = CliRunner().invoke(pokna_cli, ["sweep", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["games"] == 3
    assert report["timeouts"] >= 3
    assert report["idempotency_records_purged"] == 1

    key_ring = seats.api.key_ring()
    finals = [check_finished_game(seats.api, seats.sessions, game["id"], key_ring) for game in due]
    assert [final["status"] for final in finals] == ["cancelled", "settled", "settled"]
    assert finals[2]["outcome"]["reason"] == "claimed"
    assert seats.api.game(fresh_open["id"])["version"] == fresh_open["version"]
    assert seats.api.game(fresh_started["id"])["version"] == fresh_started["version"]
    with seats.sessions() as session:
        kept = session.scalars(select(IdempotencyRecord.key)).all()
    assert {"old", "recent"} & set(kept) == {"recent"}  # the wallets' funding keys are not expired either
    assert all(key.startswith("move-") for key in kept if key != "recent")
    replay = seats.api.post(deposit, {"amount": 1}, idempotency_key="recent")
    assert replay.headers.get("Idempotent-Replayed") == "true"
    seats.assert_books_sound([*due, fresh_open, fresh_started])

    again = CliRunner().invoke(pokna_cli, ["sweep", "--json"])
    assert again.exit_code == 0, again.output
    second = json.loads(again.output)
    assert (second["games"], second["timeouts"], second["idempotency_records_purged"]) == (0, 0, 0)


def test_sweep_applies_each_timeout_at_its_own_deadline(seats: Seats, time: Time) -> None:
    started_at = time.now
    games = [seats.act(seats.game(players), "start", 0) for players in (1, 3, 5)]
    later = Clock(now=started_at + timedelta(hours=2), open_game_ttl=time.open_game_ttl)
    report = swept(seats.runtime, later)
    assert report.games == 3
    assert report.idempotency_records_purged == 0
    total = 0
    for game in games:
        stamps = [moment(event["occurred_at"]) for event in timeouts(seats, game["id"])]
        assert stamps == [started_at + timedelta(seconds=TIMEOUT * k) for k in range(1, len(stamps) + 1)]
        total += len(stamps)
        check_finished_game(seats.api, seats.sessions, game["id"], seats.api.key_ring())
    assert report.timeouts == total
    seats.assert_books_sound(games)
    assert swept(seats.runtime, later).games == 0


def test_a_public_link_read_past_a_deadline_writes_nothing(
    seats: Seats, time: Time, client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """The link needs no key, so it only reads (issue 28, F5): the game as last decided, its passed turn
    left for the sweep or the tenant's next read to apply."""
    game = seats.act(seats.game(2), "start", 0)
    token = game["fairness"]["public_url"].rsplit("/", 1)[1]
    time.at(deadline(game) + timedelta(seconds=1))
    before = database_state(sessions)
    link = client.get(f"/v1/fairness/proofs/{token}")
    assert link.status_code == 200, link.text
    assert (link.json()["status"], link.json()["revealed"]) == ("in_progress", False)
    assert database_state(sessions) == before
    assert seats.api.game(game["id"])["version"] == game["version"] + 1  # the tenant's read applies it
