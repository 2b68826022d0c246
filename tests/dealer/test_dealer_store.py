"""Deciding under the game's lock: the one-statement
lock-and-read gives exactly what the plain reads give, even when the seats changed while it waited for
the lock; and a step decided on balances that changed before it could post is decided again on the
balances the ledger holds."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.game import Game, GameEvent, GameRoll, GameSeat
from pokna.db.models.ledger import Account, JournalTransaction
from pokna.dealer import service as games
from pokna.dealer import store_postgres
from pokna.dealer.action.locked import LOCK_FOR_ACTION, LockedGame, locked_game, split_locked
from pokna.dealer.errors import ActionRefused
from pokna.dealer.event_schemas import MoneyMovedEventData
from pokna.dealer.records import PROOF_EVENTS, EventRecord, GameRecord, RollRecord, SeatRecord
from pokna.dealer.requests import (
    ClaimAction,
    PlayerRequest,
    RollAction,
    SetClientSeedAction,
    StartAction,
    VoteAction,
)
from pokna.dealer.schemas import GameOut
from pokna.errors import NotFound
from pokna.ledger import chain_for
from pokna.runtime import Runtime
from support.acting import act, create_game, read_game
from support.driver import open_account
from support.money import Teller, new_teller
from support.sessions import unit_of_work

CLOCK = games.Clock(now=datetime(2026, 11, 30, 12, 0, tzinfo=UTC), open_game_ttl=timedelta(minutes=10))


class Seated(NamedTuple):
    tenant_id: str
    game_id: str
    wallets: list[str]
    teller: Teller


def _new_game(sessions: sessionmaker[Session], runtime: Runtime) -> Seated:
    """A tenant's wallets holding 50, 7 and 0 (deposited as its app deposits) seated in a new game."""
    teller = new_teller(runtime, sessions, "repository")
    with unit_of_work(sessions) as session:
        wallets = [
            open_account(
                session, tenant_id=teller.tenant_id, kind="player_wallet", external_id=f"p{index}"
            ).id
            for index in range(3)
        ]

    async def fund() -> None:
        for wallet, amount in zip(wallets, (50, 7), strict=False):
            await teller.deposit(wallet, amount)

    teller.run(fund())
    view = create_game(runtime, CLOCK, teller.tenant_id, games.NewGame(wallets[0], wallets[1:], stake=5))
    return Seated(teller.tenant_id, view["id"], wallets, teller)


def _play_to_the_end(
    sessions: sessionmaker[Session], runtime: Runtime, tenant_id: str, game_id: str
) -> GameOut:
    """Start, roll, split, claim: the shortest way to the end, through the service."""
    game = read_game(runtime, CLOCK, tenant_id, game_id)
    while game.turn is not None:
        account, allowed = game.turn.account_ids[0], game.turn.allowed_actions
        request: PlayerRequest
        if "start" in allowed:
            request = StartAction(type="start", account_id=account)
        elif "vote" in allowed:
            request = VoteAction(type="vote", account_id=account, choice="split")
        elif "claim" in allowed:
            request = ClaimAction(type="claim", account_id=account)
        else:
            request = RollAction(type="roll", account_id=account)
        game = act(runtime, CLOCK, tenant_id, game_id, request)
    return game


def test_the_proofs_one_query_reads_what_the_plain_queries_do(
    sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    tenant_id, game_id, wallets, teller = _new_game(sessions, runtime)
    teller.run(teller.deposit(wallets[2], 5))
    assert _play_to_the_end(sessions, runtime, tenant_id, game_id).status == "settled"
    with sessions() as session:
        params = {"tenant_id": tenant_id, "game_id": game_id, "kinds": list(PROOF_EVENTS)}
        row = session.connection().exec_driver_sql(store_postgres.RECORDED_FOR_PROOF, params).one()
        events, rolls = store_postgres.recorded_records(*row)
        # The same rows through the ORM's plain selects: what the one JSON query must reproduce.
        plain_events = [
            EventRecord(row.seq, row.kind, row.payload, row.occurred_at)
            for row in session.scalars(
                select(GameEvent)
                .where(GameEvent.game_id == game_id, GameEvent.kind.in_(("action", "money_moved")))
                .order_by(GameEvent.seq)
            )
        ]
        plain_rolls = [
            RollRecord(row.nonce, row.seat, row.purpose, row.face, row.color, row.rolled_at)
            for row in session.scalars(
                select(GameRoll).where(GameRoll.game_id == game_id).order_by(GameRoll.nonce)
            )
        ]
        assert (events, rolls) == (plain_events, plain_rolls)
    assert events[0].kind == "action"
    assert {event.kind for event in events} == {"action", "money_moved"}
    assert [roll.nonce for roll in rolls] == list(range(len(rolls)))
    assert rolls
    assert all(roll.rolled_at.tzinfo is not None for roll in rolls)


def _locked(session: Session, runtime: Runtime, tenant_id: str, game_id: str) -> LockedGame | None:
    """The game as the action's lock statement reads it (pokna.dealer.action.locked, what every game write decides
    on), run on the session's connection; None when its seats changed while the lock was awaited."""
    params = {"tenant_id": tenant_id, "game_id": game_id}
    row = session.connection().exec_driver_sql(LOCK_FOR_ACTION, params).one_or_none()
    if row is None:
        raise NotFound(f"no game {game_id}")
    return locked_game(split_locked(tuple(row))[0], runtime.keys, CLOCK)


def _plain_game(session: Session, tenant_id: str, game_id: str) -> GameRecord:
    """The game's row through a plain Core select, no lock."""
    row = session.execute(select(Game.__table__).where(Game.tenant_id == tenant_id, Game.id == game_id)).one()
    return GameRecord(**row._mapping)


def _plain_seats(session: Session, tenant_id: str, game_id: str) -> list[SeatRecord]:
    """The game's seats through a plain Core select, in seat order, no lock."""
    seat = GameSeat.__table__.c
    rows = session.execute(
        select(seat.seat, seat.account_id, seat.client_seed, seat.client_seed_source)
        .where(seat.tenant_id == tenant_id, seat.game_id == game_id)
        .order_by(seat.seat)
    )
    return [SeatRecord(*row) for row in rows]


def _plain_balances(session: Session, tenant_id: str, account_ids: list[str]) -> dict[str, int]:
    rows = session.execute(
        select(Account.id, Account.balance).where(Account.tenant_id == tenant_id, Account.id.in_(account_ids))
    )
    balances = {account_id: int(balance) for account_id, balance in rows}
    return {account_id: balances[account_id] for account_id in account_ids}


def test_the_lock_reads_what_the_plain_reads_do(sessions: sessionmaker[Session], runtime: Runtime) -> None:
    tenant_id, game_id, wallets, _ = _new_game(sessions, runtime)
    act(
        runtime, CLOCK, tenant_id, game_id,
        SetClientSeedAction(type="set_client_seed", account_id=wallets[1], client_seed="jabba"),
    )  # fmt: skip
    with unit_of_work(sessions) as session:
        locked = _locked(session, runtime, tenant_id, game_id)
    assert locked is not None
    with sessions() as session:
        assert locked.game == _plain_game(session, tenant_id, game_id)
        assert locked.seats == _plain_seats(session, tenant_id, game_id)
        assert locked.balances == _plain_balances(session, tenant_id, wallets)
    assert [seat.account_id for seat in locked.seats] == wallets
    assert locked.seats[1].client_seed == "jabba"
    assert locked.seats[1].client_seed_source == "player"
    assert locked.balances == dict(zip(wallets, (50, 7, 0), strict=True))


def test_the_lock_of_another_tenant_s_game_finds_nothing(
    sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    _, game_id, _, _ = _new_game(sessions, runtime)
    with sessions() as session, pytest.raises(NotFound, match="no game"):
        _locked(session, runtime, "ten_other", game_id)


def test_seats_changed_while_waiting_for_the_lock_are_read_fresh(
    sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    """The lock's own statement sees seats as of before it waited, so it gives none when the game moved on
    meanwhile (the version it saw is not the one it locked), and the action locks again: decided on the
    seat as changed."""
    tenant_id, game_id, wallets, _ = _new_game(sessions, runtime)
    holder = sessions()
    # What setting a client seed does under the game's lock: the seat changes and the version moves on.
    assert _locked(holder, runtime, tenant_id, game_id) is not None
    holder.execute(
        text(
            "UPDATE game_seat SET client_seed = 'bib-fortuna', client_seed_source = 'player' "
            "WHERE game_id = :game_id AND seat = 2"
        ),
        {"game_id": game_id},
    )
    holder.execute(text("UPDATE game SET version = version + 1 WHERE id = :game_id"), {"game_id": game_id})
    # (the holder now has the game locked and a seat changed, uncommitted)
    seen: list[GameOut | BaseException] = []
    waiter_started = threading.Event()

    def wait_for_the_lock() -> None:
        waiter_started.set()
        action = SetClientSeedAction(type="set_client_seed", account_id=wallets[1], client_seed="jabba")
        try:
            seen.append(act(runtime, CLOCK, tenant_id, game_id, action))
        except BaseException as error:
            seen.append(error)

    waiter = threading.Thread(target=wait_for_the_lock)
    waiter.start()
    waiter_started.wait(10)
    _backend_waiting_for_a_lock(sessions, "SELECT json_build_array(game.id")  # the lock (its text's start)
    assert waiter.is_alive(), "the waiter should be blocked on the game's row lock"
    holder.commit()
    holder.close()
    waiter.join(30)
    [answer] = seen
    assert isinstance(answer, GameOut), answer
    assert [seat.client_seed for seat in answer.seats] == [None, "jabba", "bib-fortuna"]
    assert answer.version == 3  # created at 1, the holder's change, then this action


@pytest.mark.parametrize(
    ("move", "outcome"),
    [("withdraw", "cannot_pay"), ("deposit", "started")],
)
def test_a_step_decided_on_stale_balances_is_decided_again_on_the_held_ones(
    sessions: sessionmaker[Session], runtime: Runtime, move: str, outcome: str
) -> None:
    """The start is decided on balances read without a lock (player 1 holds 7, enough for the ante of 5),
    and its game_write() waits for the game's chain's head. Meanwhile a withdrawal leaves 2 (or a deposit
    12): the ledger answers that the balances moved, nothing of the first decision is written, and the
    start is decided again on the balances the ledger's locks hold: refused as the rules say, with nothing
    posted (or, with more money, posted)."""
    seated = _new_game(sessions, runtime)
    while chain_for(seated.game_id) == chain_for(seated.wallets[1]):  # the move must not wait for that head
        seated = _new_game(sessions, runtime)
    tenant_id, game_id, wallets, teller = seated
    teller.run(teller.deposit(wallets[2], 5))
    head = {"tenant_id": tenant_id, "chain": chain_for(game_id)}
    with unit_of_work(sessions) as session:  # its head as ledger_post() creates it on a chain's first posting
        session.execute(
            text(
                "INSERT INTO ledger_head (tenant_id, chain, last_seq, last_hash) "
                "VALUES (:tenant_id, :chain, 0, repeat('0', 64)) ON CONFLICT DO NOTHING"
            ),
            head,
        )
    holder = sessions()
    holder.execute(
        text("SELECT last_seq FROM ledger_head WHERE tenant_id = :tenant_id AND chain = :chain FOR UPDATE"),
        head,
    )
    answers: list[BaseException | GameOut] = []

    def start() -> None:
        action = StartAction(type="start", account_id=wallets[0])
        try:
            answers.append(act(runtime, CLOCK, tenant_id, game_id, action))
        except BaseException as error:
            answers.append(error)

    starter = threading.Thread(target=start)
    starter.start()
    try:
        _backend_waiting_for_a_lock(sessions, "game_write")  # decided on 7, waiting to post
        moved = teller.run(getattr(teller, move)(wallets[1], 5))
        assert moved["balance"] == {"withdraw": 2, "deposit": 12}[move]
    finally:
        holder.commit()
        holder.close()
        starter.join(60)
    assert len(answers) == 1
    balances = {wallets[0]: 50, wallets[1]: {"withdraw": 2, "deposit": 12}[move], wallets[2]: 5}
    with sessions() as session:
        posted = session.scalar(select(func.count()).where(JournalTransaction.reference == game_id))
        game = _plain_game(session, tenant_id, game_id)
        held = _plain_balances(session, tenant_id, wallets)
    if outcome == "cannot_pay":
        refusal = answers[0]
        assert isinstance(refusal, ActionRefused), refusal
        assert refusal.code == "cannot_pay"
        assert game.status == "open"
        assert held == balances
        assert posted == 0
    else:
        assert isinstance(answers[0], GameOut), answers[0]
        assert game.status == "in_progress"
        # The players' antes, decided on the balances held (the Vigo pays none).
        assert held == {wallets[0]: 50, wallets[1]: 12 - 5, wallets[2]: 0}
        assert posted == 2


@pytest.mark.parametrize(
    ("text", "refused"),
    [("plain", False), ("\x00", True), ("a\\\x00", True), ("a\\u0000", False), ("\\\\u0000", False)],
)
def test_a_game_row_with_a_nul_is_refused_before_postgresql_sees_it(text: str, refused: bool) -> None:
    """json_populate_record makes every JSON string text, and text cannot hold U+0000; a backslash followed
    by the letters u0000 is ordinary text."""
    rows = [{"payload": {"note": text}}]
    if refused:
        with pytest.raises(ValueError, match="NUL"):
            store_postgres.encode_rows(rows)
    else:
        assert json.loads(store_postgres.encode_rows(rows)) == rows


def test_game_write_writes_the_rest_of_the_step_before_it_waits_for_the_ledger_head(
    sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    """A chain's head serializes its postings until COMMIT, so game_write() takes it last (migration
    0012_head_last): while another transaction holds the head of the game's chain, a start waits for it having
    already updated the game and inserted its events (it holds their tables' write locks, and none on the
    journal's), and once the head is free it posts the antes and the money events name their ledger seq."""
    tenant_id, game_id, wallets, teller = _new_game(sessions, runtime)
    teller.run(teller.deposit(wallets[2], 5))
    chain = {"tenant_id": tenant_id, "chain": chain_for(game_id)}  # the chain the game posts on
    with unit_of_work(sessions) as session:  # its head as ledger_post() creates it on a chain's first posting
        session.execute(
            text(
                "INSERT INTO ledger_head (tenant_id, chain, last_seq, last_hash) "
                "VALUES (:tenant_id, :chain, 0, repeat('0', 64)) ON CONFLICT DO NOTHING"
            ),
            chain,
        )
    holder = sessions()
    holder.execute(
        text("SELECT last_seq FROM ledger_head WHERE tenant_id = :tenant_id AND chain = :chain FOR UPDATE"),
        chain,
    )
    outcome: list[BaseException | GameOut] = []

    def start() -> None:
        try:
            outcome.append(
                act(runtime, CLOCK, tenant_id, game_id, StartAction(type="start", account_id=wallets[0]))
            )
        except BaseException as error:
            outcome.append(error)

    starter = threading.Thread(target=start)
    starter.start()
    try:
        waiting = _backend_waiting_for_a_lock(sessions, "game_write")
        with sessions() as session:
            written = set(
                session.scalars(
                    text(
                        "SELECT relation::regclass::text FROM pg_locks WHERE pid = :pid AND granted "
                        "AND mode = 'RowExclusiveLock' AND relation IS NOT NULL"
                    ),
                    {"pid": waiting},
                )
            )
        assert {"game", "game_event"} <= written
        assert not written & {"journal_transaction", "posting", "ledger_head"}
    finally:
        holder.commit()
        holder.close()
        starter.join(60)
    assert len(outcome) == 1
    assert isinstance(outcome[0], GameOut), outcome[0]
    with sessions() as session:
        posted = session.scalars(
            select(JournalTransaction.seq)
            .where(JournalTransaction.reference == game_id)
            .order_by(JournalTransaction.seq)
        ).all()
        money = session.scalars(
            select(GameEvent.payload).where(GameEvent.game_id == game_id, GameEvent.kind == "money_moved")
        ).all()
        stored = session.scalars(
            text("SELECT payload::text FROM game_event WHERE game_id = :g AND kind = 'money_moved'"),
            {"g": game_id},
        ).all()
    assert posted
    assert sorted(event["ledger_seq"] for event in money) == list(posted)
    # game_write() set ledger_seq by name: the payload's members stay in the documented order.
    for payload in stored:
        members = json.loads(payload, object_pairs_hook=list)
        assert [name for name, _ in members] == list(MoneyMovedEventData.model_fields)


def _backend_waiting_for_a_lock(sessions: sessionmaker[Session], statement: str) -> int:
    """The backend of this test's database blocked on a lock while running `statement`, polled until it
    is (up to a minute: the waiter's thread needs some time to get there)."""
    for _ in range(600):
        with sessions() as session:
            found = session.scalar(
                text(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query LIKE :pattern AND pid <> pg_backend_pid()"
                ),
                {"pattern": f"%{statement}%"},
            )
        if found is not None:
            return int(found)
        threading.Event().wait(0.1)
    raise AssertionError(f"no backend ever waited for a lock in {statement}")
