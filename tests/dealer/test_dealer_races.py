"""Races on one real `pokna serve` and one real PostgreSQL: requests from many threads, each its own client.

Whatever arrives at once, a turn is applied exactly once, the losers get a 409 carrying the game as the
winner left it, no roll nonce is used twice or skipped, no transfer is posted twice and no money appears
or vanishes.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import make_engine
from pokna.db.models.game import Game as GameRow
from pokna.db.models.game import GameRoll
from pokna.db.models.ledger import Account, JournalTransaction
from pokna.tenants.authentication import key_digest
from support.game_play import (
    CONFLICT_CODES,
    FINAL,
    Api,
    Game,
    Response,
    check_finished_game,
    new_tenant_key,
    obliging,
    play,
    random_policy,
)
from support.key_checks import tenant_of_key
from support.servers import running_server
from support.sessions import make_sessionmaker

THREADS = 8
FUNDS = 10_000
T = TypeVar("T")

# Every race runs on one PostgreSQL; those marked `citus` again on the Citus cluster (a database for the
# module on each): starts, overlapping games on shared wallets, a creation against a game's locks, keyed
# retries of a deposit and a roll, and a retry behind a lock (the others race the same statements again).


@dataclass
class Live:
    """One `pokna serve` on one PostgreSQL database, shared by the module's tests (each its own tenant)."""

    base: str
    sessions: sessionmaker[Session]

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=60)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, module_database_url: str) -> Iterator[Live]:
    url = module_database_url
    engine = make_engine(url)
    root = tmp_path_factory.mktemp("races")
    try:
        # Rate limits off: each test checks every game it played afterwards, hundreds of reads under one
        # key in a burst, past the default 100/s now that a read takes about a millisecond.
        env = {"POKNA_DATABASE_URL": url, "POKNA_LOG_LEVEL": "WARNING", "POKNA_RATE_LIMIT_PER_SECOND": "0"}
        with running_server(env, root / "data") as base:
            yield Live(base, make_sessionmaker(engine))
    finally:
        engine.dispose()


@dataclass
class Table:
    """A tenant with funded wallets and one client per racing thread."""

    api: Api
    apis: list[Api]
    tenant_id: str
    wallets: list[str]
    funded: int

    def game(self, players: int, **terms: Any) -> Game:
        return self.api.create_game(self.wallets[0], self.wallets[1 : players + 1], **terms)


@pytest.fixture
def table(live: Live) -> Iterator[Table]:
    key = new_tenant_key(live.sessions)
    tenant_id = tenant_of_key(live.sessions, key_digest(key))
    clients = [live.client() for _ in range(THREADS)]
    try:
        apis = [Api(client, key) for client in clients]
        wallets = [apis[0].wallet(FUNDS) for _ in range(THREADS)]
        yield Table(apis[0], apis, tenant_id, wallets, FUNDS * len(wallets))
    finally:
        for client in clients:
            client.close()


def together(count: int, work: Callable[[int], T], timeout: float = 60) -> list[T]:
    """`work(i)` on `count` threads released at one instant; every result within `timeout` seconds."""
    barrier = threading.Barrier(count)

    def run(index: int) -> T:
        barrier.wait(timeout=timeout)
        return work(index)

    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(run, index) for index in range(count)]
        return [future.result(timeout=timeout) for future in futures]


def race(table: Table, game_id: str, bodies: Sequence[dict[str, Any]]) -> list[Response]:
    """Send `bodies[i]` from thread i, all at once."""
    return together(len(bodies), lambda index: table.apis[index].act(game_id, bodies[index]))


def one_applied(responses: Sequence[Response], codes: frozenset[str] = CONFLICT_CODES) -> Game:
    """Exactly one 200; every other a 409 with a known code and the game exactly as the winner left it."""
    statuses = Counter(response.status_code for response in responses)
    assert statuses == {200: 1, 409: len(responses) - 1}, [response.text for response in responses]
    winner: Game = next(response.json() for response in responses if response.status_code == 200)
    for response in responses:
        if response.status_code == 409:
            problem = response.json()
            assert response.headers["content-type"].startswith("application/problem+json")
            assert problem["code"] in codes, problem
            assert problem["game"]["id"] == winner["id"]
            assert problem["game"]["version"] == winner["version"], problem
    return winner


def money_in_play(live: Live, table: Table) -> int:
    """Every wallet and every pot of the tenant, read in one statement (one snapshot)."""
    with live.sessions() as session:
        total = session.scalar(
            select(func.coalesce(func.sum(Account.balance), 0)).where(
                Account.tenant_id == table.tenant_id, Account.kind.in_(("player_wallet", "game_pot"))
            )
        )
    return int(total or 0)


def assert_books_sound(live: Live, table: Table) -> None:
    assert money_in_play(live, table) == table.funded
    assert table.api.trial_balance_total() == 0
    with live.sessions() as session:
        negative = session.scalar(
            select(func.count())
            .where(Account.tenant_id == table.tenant_id, Account.balance < 0)
            .where(Account.kind.in_(("player_wallet", "game_pot")))
        )
    assert negative == 0


# --- the same turn, many times at once --------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_turn_sent_eight_times_at_once_is_applied_once(live: Live, table: Table, seed: int) -> None:
    rng = random.Random(seed)
    decide = random_policy(rng, cancel_chance=0.0)
    game = table.game(5)
    key_ring = table.api.key_ring()
    for _ in range(200):
        if game["status"] in FINAL:
            break
        body = decide(game)
        game = one_applied(race(table, game["id"], [body] * THREADS))
    assert game["status"] == "settled"
    check_finished_game(table.api, live.sessions, game["id"], key_ring)
    assert_books_sound(live, table)


@pytest.mark.citus
def test_two_starts_at_once_post_the_antes_once(live: Live, table: Table) -> None:
    game = table.game(4)
    start = {"type": "start", "account_id": table.wallets[0]}
    started = one_applied(race(table, game["id"], [start, start]), frozenset({"wrong_phase"}))
    assert started["status"] == "in_progress"
    assert started["pot"] == 4 * 5
    with live.sessions() as session:
        antes = session.scalar(
            select(func.count()).where(
                JournalTransaction.reference == game["id"], JournalTransaction.kind == "ante"
            )
        )
        rolls = session.scalars(select(GameRoll.nonce).where(GameRoll.game_id == game["id"])).all()
    assert antes == 4
    assert list(rolls) == [0]  # the favor, rolled once
    assert [table.api.balance(wallet) for wallet in table.wallets[1:5]] == [FUNDS - 5] * 4
    play([table.api], started)
    assert_books_sound(live, table)


def _reach(table: Table, phase: str, players: int, attempts: int = 40) -> Game:
    """A game at `phase`, by starting games and rolling until one gets there (rolls are random)."""
    for _ in range(attempts):
        game = play_until(table, table.game(players), lambda current: current["phase"] == phase)
        if game["phase"] == phase:
            return game
    raise AssertionError(f"no game reached {phase} in {attempts} attempts")


def play_until(table: Table, game: Game, stop: Callable[[Game], bool]) -> Game:
    while game["status"] not in FINAL and not stop(game):
        if game["phase"] not in ("open", "seeking"):
            return game
        game = table.api.ok(table.api.act(game["id"], obliging(game)))
    return game


def test_claim_and_challenge_at_once_apply_one_of_them(live: Live, table: Table) -> None:
    key_ring = table.api.key_ring()
    winners: Counter[str] = Counter()
    for _ in range(6):
        game = _reach(table, "lone_survivor", players=1)
        challenger = game["turn"]["account_ids"][0]
        bodies = [
            {"type": "claim", "account_id": challenger},
            {"type": "challenge", "account_id": challenger},
        ]
        won = one_applied(race(table, game["id"], bodies), frozenset({"wrong_phase", "game_over"}))
        winners["claim" if won["status"] == "settled" else "challenge"] += 1
        finished = play([table.api], won)
        check_finished_game(table.api, live.sessions, finished["id"], key_ring)
    assert sum(winners.values()) == 6
    assert_books_sound(live, table)


def test_the_same_vote_eight_times_counts_once(live: Live, table: Table) -> None:
    game = _reach(table, "voting", players=6)
    voter = game["turn"]["account_ids"][0]
    vote = {"type": "vote", "account_id": voter, "choice": "split"}
    voted = one_applied(race(table, game["id"], [vote] * THREADS), frozenset({"already_voted", "game_over"}))
    seat = next(seat for seat in voted["seats"] if seat["account_id"] == voter)
    assert seat["voted"] is True
    events = table.api.events(game["id"])
    assert sum(1 for event in events if event["kind"] == "voted") == 1
    finished = play([table.api], voted)
    check_finished_game(table.api, live.sessions, finished["id"], table.api.key_ring())
    assert_books_sound(live, table)


def test_every_survivor_votes_at_once_and_the_pot_is_shared_once(live: Live, table: Table) -> None:
    game = _reach(table, "voting", players=6)
    voters = game["turn"]["account_ids"]
    pot = game["pot"]
    bodies = [{"type": "vote", "account_id": voter, "choice": "split"} for voter in voters]
    responses = race(table, game["id"], bodies)
    assert [response.status_code for response in responses] == [200] * len(voters), [
        r.text for r in responses
    ]
    final = table.api.game(game["id"])
    assert final["status"] == "settled"
    assert final["outcome"]["reason"] == "split"
    assert final["version"] == game["version"] + len(voters)
    finished = check_finished_game(table.api, live.sessions, game["id"], table.api.key_ring())
    splits = [event for event in table.api.events(game["id"]) if event["kind"] == "money_moved"]
    assert sum(move["data"]["amount"] for move in splits if move["data"]["kind"] == "split") == pot
    assert finished["pot"] == 0
    assert_books_sound(live, table)


# --- optimistic concurrency -------------------------------------------------------------------------------


def test_eight_legal_actions_with_one_expected_version_let_one_through(live: Live, table: Table) -> None:
    game = table.game(7)
    version = game["version"]
    bodies = [
        {
            "type": "set_client_seed",
            "account_id": wallet,
            "client_seed": f"seed-{index}",
            "expected_version": version,
        }
        for index, wallet in enumerate(table.wallets)
    ]
    winner = one_applied(race(table, game["id"], bodies), frozenset({"conflict"}))
    assert winner["version"] == version + 1
    assert sum(seat["client_seed_source"] == "player" for seat in winner["seats"]) == 1


def test_start_and_cancel_with_one_expected_version_apply_one(live: Live, table: Table) -> None:
    game = table.game(3)
    bodies = [
        {"type": "start", "account_id": table.wallets[0], "expected_version": game["version"]},
        {"type": "cancel", "expected_version": game["version"]},
    ]
    winner = one_applied(race(table, game["id"], bodies), frozenset({"conflict"}))
    assert winner["status"] in ("in_progress", "cancelled")
    finished = play([table.api], winner)
    check_finished_game(table.api, live.sessions, finished["id"], table.api.key_ring())
    assert_books_sound(live, table)


# --- many games at once on shared wallets -----------------------------------------------------------------


@pytest.mark.citus
def test_eight_threads_playing_overlapping_games_on_six_wallets(live: Live, table: Table) -> None:
    wallets = table.wallets[:6]
    games_per_thread = 3
    stop = threading.Event()
    snapshots: list[int] = []
    negatives: list[int] = []

    def watch() -> None:
        """Any snapshot, mid-game or not, holds exactly the money deposited, and nobody below zero."""
        while not stop.is_set():
            snapshots.append(money_in_play(live, table))
            with live.sessions() as session:
                negatives.extend(
                    session.scalars(
                        select(Account.balance).where(
                            Account.tenant_id == table.tenant_id,
                            Account.kind.in_(("player_wallet", "game_pot")),
                            Account.balance < 0,
                        )
                    )
                )
            time.sleep(0.02)

    def player(index: int) -> list[str]:
        rng = random.Random(1000 + index)
        decide = random_policy(rng, roll_again_chance=0.4)
        api = table.apis[index]
        played = []
        for _ in range(games_per_thread):
            # Each game is created while the other threads are playing on the same wallets.
            seated = rng.sample(wallets, rng.randint(2, 6))
            game = api.create_game(seated[0], seated[1:], stake=rng.choice((1, 5, 20)))
            played.append(play([api], game, decide)["id"])
        return played

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        game_ids = [game_id for played in together(THREADS, player, timeout=180) for game_id in played]
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert not watcher.is_alive()
    assert len(game_ids) == THREADS * games_per_thread
    assert snapshots
    assert set(snapshots) == {table.funded}
    assert negatives == []
    key_ring = table.api.key_ring()
    outcomes = Counter(
        check_finished_game(table.api, live.sessions, game_id, key_ring)["status"] for game_id in game_ids
    )
    assert outcomes["settled"] > 0
    assert_books_sound(live, table)


def _lock_waiters(live: Live) -> int:
    """Backends waiting on a lock: on every node of a Citus cluster (a delegated call waits on its worker)."""
    with live.sessions() as session:
        citus = session.scalar(text("SELECT count(*) FROM pg_extension WHERE extname = 'citus'"))
        activity = "citus_stat_activity" if citus else "pg_stat_activity"
        waiting = session.scalar(
            text(
                f"SELECT count(*) FROM {activity} "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        )
    return int(waiting or 0)


def _wait_for(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


@pytest.mark.citus
def test_creating_a_game_while_another_game_holds_the_same_wallets(live: Live, table: Table) -> None:
    """Creating a game checks each seat's wallet as a foreign key (FOR KEY SHARE, in seat order) while an
    action locks the wallets of its game FOR UPDATE (in id order): the two orders can cross.

    The playing game's start locks `low` then `high`; a third transaction holding `high` FOR KEY SHARE
    (as creating any other game seating `high` does) pauses it in between, so the crossing is certain.
    """
    low, high = sorted(table.wallets[:2])
    busy = table.api.create_game(low, [high])
    responses: list[Response] = []
    with live.sessions() as other, ThreadPoolExecutor(max_workers=2) as pool:
        other.execute(
            text("SELECT 1 FROM account WHERE tenant_id = :tenant_id AND id = :id FOR KEY SHARE"),
            {"tenant_id": table.tenant_id, "id": high},
        )
        start = pool.submit(table.apis[0].act, busy["id"], {"type": "start", "account_id": low})
        _wait_for(lambda: start.done() or _lock_waiters(live) >= 1)
        body = {"vigo_account_id": high, "player_account_ids": [low], "stake": 5}
        create = pool.submit(table.apis[1].post, "/v1/games", body)
        _wait_for(lambda: create.done() or _lock_waiters(live) >= 2)
        other.rollback()
        responses = [start.result(timeout=60), create.result(timeout=60)]
    assert [response.status_code for response in responses] == [200, 201], [r.text for r in responses]


# --- idempotent retries, all at once ----------------------------------------------------------------------


def idempotent_race(table: Table, path: str, body: dict[str, Any], key: str) -> list[Response]:
    return together(THREADS, lambda index: table.apis[index].post(path, body, idempotency_key=key))


def stored_once(responses: Sequence[Response], status: int) -> Any:
    """Each response is the stored success or `idempotency_request_in_progress`; all successes are one."""
    bodies = []
    for response in responses:
        if response.status_code == 409:
            assert response.json()["code"] == "idempotency_request_in_progress", response.text
        else:
            assert response.status_code == status, response.text
            bodies.append(response.json())
    assert bodies, "no request succeeded"
    assert all(body == bodies[0] for body in bodies)
    return bodies[0]


@pytest.mark.citus
def test_one_deposit_sent_eight_times_with_one_key_is_posted_once(live: Live, table: Table) -> None:
    wallet = table.wallets[0]
    path = f"/v1/accounts/{wallet}/deposits"
    posted = stored_once(idempotent_race(table, path, {"amount": 250}, "deposit-once"), 201)
    assert table.api.balance(wallet) == FUNDS + 250
    retry = table.api.post(path, {"amount": 250}, idempotency_key="deposit-once")
    assert retry.status_code == 201
    assert retry.headers.get("Idempotent-Replayed") == "true"
    assert retry.json() == posted
    table.funded += 250
    assert_books_sound(live, table)


@pytest.mark.citus
def test_one_roll_sent_eight_times_with_one_key_is_applied_once(live: Live, table: Table) -> None:
    game = table.api.ok(table.api.act(table.game(3)["id"], {"type": "start", "account_id": table.wallets[0]}))
    body = {"type": "roll", "account_id": game["turn"]["account_ids"][0]}
    rolled = stored_once(idempotent_race(table, f"/v1/games/{game['id']}/actions", body, "roll-once"), 200)
    assert rolled["version"] == game["version"] + 1
    assert rolled["fairness"]["next_nonce"] == 2
    with live.sessions() as session:
        nonces = session.scalars(select(GameRoll.nonce).where(GameRoll.game_id == game["id"])).all()
    assert sorted(nonces) == [0, 1]
    assert table.api.game(game["id"])["version"] == rolled["version"]
    play([table.api], rolled)
    check_finished_game(table.api, live.sessions, game["id"], table.api.key_ring())
    assert_books_sound(live, table)


def test_one_game_created_eight_times_with_one_key_exists_once(live: Live, table: Table) -> None:
    body = {"vigo_account_id": table.wallets[0], "player_account_ids": table.wallets[1:4], "stake": 5}
    created = stored_once(idempotent_race(table, "/v1/games", body, "create-once"), 201)
    with live.sessions() as session:
        games = session.scalars(select(GameRow.id).where(GameRow.tenant_id == table.tenant_id)).all()
    assert list(games) == [created["id"]]


def test_eight_deals_of_one_tables_next_round_deal_one(live: Live, table: Table) -> None:
    created = table.api.post("/v1/tables", {"account_ids": table.wallets[:4], "stake": 5})
    table_id = table.api.ok(created, 201)["id"]
    responses = together(THREADS, lambda index: table.apis[index].post(f"/v1/tables/{table_id}/rounds"))
    statuses = Counter(response.status_code for response in responses)
    assert statuses == {201: 1, 409: THREADS - 1}, [response.text for response in responses]
    assert {response.json()["code"] for response in responses if response.status_code == 409} == {
        "round_in_progress"
    }
    dealt = table.api.ok(table.api.get(f"/v1/tables/{table_id}"))
    assert [game["round_number"] for game in dealt["rounds"]] == [1]


# --- a retry that outlives the lease --------------------------------------------------------------------------


def _wait_for_lock_waiters(live: Live, count: int) -> None:
    _wait_for(lambda: _lock_waiters(live) >= count)


@pytest.mark.citus
def test_a_retry_of_a_request_waiting_on_a_lock_does_not_post_twice(live: Live, table: Table) -> None:
    """A claim is taken over only when nobody holds it; a request merely waiting on a lock is alive.

    The first deposit is held on the tenant's ledger head (a busy tenant) for as long as the test likes,
    then the client's retry arrives.
    """
    wallet = table.wallets[0]
    path = f"/v1/accounts/{wallet}/deposits"

    def send(index: int) -> Response:
        return table.apis[index].post(path, {"amount": 10}, idempotency_key="slow-deposit")

    with live.sessions() as holder, ThreadPoolExecutor(max_workers=2) as pool:
        holder.execute(
            text("SELECT 1 FROM ledger_head WHERE tenant_id = :tenant FOR UPDATE"),
            {"tenant": table.tenant_id},
        )
        first = pool.submit(send, 0)
        _wait_for_lock_waiters(live, 1)
        # The running request holds its claim: the retry is told so at once, it does not queue behind it.
        retried = pool.submit(send, 1).result(timeout=30)
        holder.rollback()
        responses = [first.result(timeout=60), retried]
    assert retried.status_code == 409
    assert table.api.balance(wallet) == FUNDS + 10
    stored_once(responses, 201)
