"""Every game query lives here. Games, seats, rolls and events are read and written as plain records
with Core statements (pokna.dealer.records); tables are ORM objects. On PostgreSQL the statements of an
action (lock, save, proof, new game) are pokna.dealer.repository_pg's, one round trip each."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.orm import Session

from pokna.db.models.game import Game, GameEvent, GameRoll, GameSeat, GameTable
from pokna.db.models.ledger import Account
from pokna.dealer import repository_pg
from pokna.dealer.records import (
    MUTABLE_GAME_COLUMNS,
    EventRecord,
    GameRecord,
    RollRecord,
    SeatRecord,
)
from pokna.errors import NotFound

ACTION_EVENT = "action"
MONEY_EVENT = "money_moved"

_game = cast(Table, Game.__table__)
_seat = cast(Table, GameSeat.__table__)
_roll = cast(Table, GameRoll.__table__)
_event = cast(Table, GameEvent.__table__)
_account = cast(Table, Account.__table__)

_SEAT_COLUMNS = (_seat.c.seat, _seat.c.account_id, _seat.c.client_seed, _seat.c.client_seed_source)


def get_game(session: Session, tenant_id: str, game_id: str, *, for_update: bool = False) -> GameRecord:
    """Another tenant's game is exactly as absent as a game that does not exist. `for_update` takes the
    game's row lock (FOR NO KEY UPDATE: inserting its events and rolls takes KEY SHARE on it)."""
    query = select(_game).where(_game.c.id == game_id, _game.c.tenant_id == tenant_id)
    if for_update:
        query = query.with_for_update(key_share=True)
    row = session.execute(query).one_or_none()
    if row is None:
        raise NotFound(f"no game {game_id}")
    return GameRecord(**row._mapping)


def lock_game_and_seats(
    session: Session, tenant_id: str, game_id: str
) -> tuple[GameRecord, list[SeatRecord], dict[str, int]]:
    """get_game(for_update=True) and seats_and_balances in one round trip on PostgreSQL.

    A statement's snapshot is taken before it waits for the row lock, so seats read by the same
    statement may predate a change committed while it waited; the locked game row itself is the latest.
    Every seat change bumps the game's version, so when the locked version is the one the snapshot saw,
    the seats read are current; otherwise they are read again (only when two requests raced)."""
    if session.get_bind().dialect.name != "postgresql":
        game = get_game(session, tenant_id, game_id, for_update=True)
        return (game, *seats_and_balances(session, game.id))
    locked = repository_pg.lock_game_and_seats(session, tenant_id, game_id)
    if locked is None:
        raise NotFound(f"no game {game_id}")
    game, seen_version, seats, balances = locked
    if seen_version != game.version:
        return (game, *seats_and_balances(session, game.id))
    return game, seats, balances


def deadline_passed(session: Session, tenant_id: str, game_id: str, now: datetime) -> bool:
    """Raises NotFound like get_game, so a lazy deadline check never hides an unknown game."""
    row = session.execute(
        select(_game.c.turn_deadline_at).where(_game.c.id == game_id, _game.c.tenant_id == tenant_id)
    ).one_or_none()
    if row is None:
        raise NotFound(f"no game {game_id}")
    deadline: datetime | None = row.turn_deadline_at
    return deadline is not None and deadline <= now


# Built once: an action's statements are executed with fresh parameters, not rebuilt.
_SAVE_GAME = (
    update(_game)
    .where(_game.c.id == bindparam("saved_game_id"), _game.c.version == bindparam("previous_version"))
    .values({name: bindparam(name) for name in MUTABLE_GAME_COLUMNS})
)
_INSERT_EVENT = insert(_event)
_INSERT_ROLL = insert(_roll)


def save_game(session: Session, game: GameRecord, *, previous_version: int) -> None:
    """Write the mutable columns back. The version guard is belt and braces: the caller holds the lock."""
    values = {name: getattr(game, name) for name in MUTABLE_GAME_COLUMNS}
    result = session.execute(
        _SAVE_GAME, {**values, "saved_game_id": game.id, "previous_version": previous_version}
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        raise RuntimeError(f"game {game.id} changed under its row lock (version {previous_version})")


def seats_of(session: Session, game_id: str) -> list[SeatRecord]:
    rows = session.execute(select(*_SEAT_COLUMNS).where(_seat.c.game_id == game_id).order_by(_seat.c.seat))
    return [SeatRecord(*row) for row in rows]


def seats_of_games(session: Session, game_ids: Sequence[str]) -> dict[str, list[SeatRecord]]:
    seats: dict[str, list[SeatRecord]] = {game_id: [] for game_id in game_ids}
    rows = session.execute(
        select(_seat.c.game_id, *_SEAT_COLUMNS)
        .where(_seat.c.game_id.in_(list(game_ids)))
        .order_by(_seat.c.game_id, _seat.c.seat)
    )
    for row in rows:
        seats[row.game_id].append(
            SeatRecord(row.seat, row.account_id, row.client_seed, row.client_seed_source)
        )
    return seats


def seats_and_balances(session: Session, game_id: str) -> tuple[list[SeatRecord], dict[str, int]]:
    """The seats in order and their wallets' balances, read without a lock (see ledger.holds)."""
    rows = session.execute(
        select(*_SEAT_COLUMNS, _account.c.balance)
        .join(_account, _account.c.id == _seat.c.account_id)
        .where(_seat.c.game_id == game_id)
        .order_by(_seat.c.seat)
    )
    seats, balances = [], {}
    for row in rows:
        seats.append(SeatRecord(row.seat, row.account_id, row.client_seed, row.client_seed_source))
        balances[row.account_id] = int(row.balance)
    return seats, balances


def wallet_candidates(session: Session, tenant_id: str, account_ids: Sequence[str]) -> dict[str, Any]:
    """The tenant's accounts among `account_ids` (kind and currency), to check a seating in one query."""
    rows = session.execute(
        select(_account.c.id, _account.c.kind, _account.c.currency).where(
            _account.c.id.in_(list(account_ids)), _account.c.tenant_id == tenant_id
        )
    )
    return {row.id: row for row in rows}


def save_client_seeds(session: Session, game_id: str, seats: Iterable[SeatRecord]) -> None:
    session.execute(
        update(_seat)
        .where(_seat.c.game_id == bindparam("seat_game_id"), _seat.c.seat == bindparam("seat_number"))
        .values(client_seed=bindparam("seed"), client_seed_source=bindparam("source")),
        [
            {
                "seat_game_id": game_id,
                "seat_number": seat.seat,
                "seed": seat.client_seed,
                "source": seat.client_seed_source,
            }
            for seat in seats
        ],
    )


def insert_events(session: Session, game_id: str, events: Sequence[EventRecord]) -> None:
    if events:
        session.execute(_INSERT_EVENT, _event_rows(game_id, events))


def insert_rolls(session: Session, game_id: str, rolls: Sequence[RollRecord]) -> None:
    if rolls:
        session.execute(_INSERT_ROLL, _roll_rows(game_id, rolls))


def save_step(
    session: Session,
    game: GameRecord,
    *,
    previous_version: int,
    events: Sequence[EventRecord],
    rolls: Sequence[RollRecord],
    seeded: Sequence[SeatRecord] = (),
) -> None:
    """A step's events, rolls, game row and the client seeds it fixed (`seeded`). On PostgreSQL one
    statement: the action holds the game's lock until commit, so every round trip saved shortens that
    critical section."""
    if session.get_bind().dialect.name != "postgresql":
        if seeded:
            save_client_seeds(session, game.id, seeded)
        insert_events(session, game.id, events)
        insert_rolls(session, game.id, rolls)
        save_game(session, game, previous_version=previous_version)
        return
    if not repository_pg.save_step(
        session,
        game.id,
        previous_version,
        game={name: getattr(game, name) for name in MUTABLE_GAME_COLUMNS},
        seats=[_seat_values(game.id, seat) for seat in seeded],
        events=_event_rows(game.id, events),
        rolls=_roll_rows(game.id, rolls),
    ):
        raise RuntimeError(f"game {game.id} changed under its row lock (version {previous_version})")


def insert_game(
    session: Session, game: GameRecord, seats: Sequence[SeatRecord], events: Sequence[EventRecord]
) -> None:
    """A new game with its seats and first events; on PostgreSQL in one statement."""
    game_row = {name: getattr(game, name) for name in repository_pg.GAME_COLUMNS}
    seat_rows = [_seat_values(game.id, seat) for seat in seats]
    if session.get_bind().dialect.name != "postgresql":
        session.execute(insert(_game), game_row)
        session.execute(insert(_seat), seat_rows)
        insert_events(session, game.id, events)
        return
    repository_pg.insert_game(session, game=game_row, seats=seat_rows, events=_event_rows(game.id, events))


def _event_rows(game_id: str, events: Sequence[EventRecord]) -> list[dict[str, Any]]:
    return [
        {
            "game_id": game_id,
            "seq": event.seq,
            "kind": event.kind,
            "payload": event.payload,
            "occurred_at": event.occurred_at,
        }
        for event in events
    ]


def _roll_rows(game_id: str, rolls: Sequence[RollRecord]) -> list[dict[str, Any]]:
    return [
        {
            "game_id": game_id,
            "nonce": roll.nonce,
            "seat": roll.seat,
            "purpose": roll.purpose,
            "face": roll.face,
            "color": roll.color,
            "rolled_at": roll.rolled_at,
        }
        for roll in rolls
    ]


def rolls_of(session: Session, game_id: str) -> list[RollRecord]:
    rows = session.execute(
        select(_roll.c.nonce, _roll.c.seat, _roll.c.purpose, _roll.c.face, _roll.c.color, _roll.c.rolled_at)
        .where(_roll.c.game_id == game_id)
        .order_by(_roll.c.nonce)
    )
    return [RollRecord(*row) for row in rows]


def _event_columns() -> tuple[Any, ...]:
    return (_event.c.seq, _event.c.kind, _event.c.payload, _event.c.occurred_at)


def recorded_for_proof(session: Session, game_id: str) -> tuple[list[EventRecord], list[RollRecord]]:
    """What a proof is built from: the action and money events, and the rolls, in order."""
    kinds = (ACTION_EVENT, MONEY_EVENT)
    if session.get_bind().dialect.name == "postgresql":
        return repository_pg.recorded_for_proof(session, game_id, kinds)
    return events_of_kinds(session, game_id, kinds), rolls_of(session, game_id)


def events_of_kinds(session: Session, game_id: str, kinds: Sequence[str]) -> list[EventRecord]:
    rows = session.execute(
        select(*_event_columns())
        .where(_event.c.game_id == game_id, _event.c.kind.in_(list(kinds)))
        .order_by(_event.c.seq)
    )
    return [EventRecord(*row) for row in rows]


def event_page(session: Session, game_id: str, after_seq: int, limit: int) -> list[EventRecord]:
    rows = session.execute(
        select(*_event_columns())
        .where(_event.c.game_id == game_id, _event.c.seq > after_seq)
        .order_by(_event.c.seq)
        .limit(limit)
    )
    return [EventRecord(*row) for row in rows]


def due_game_ids(session: Session, now: datetime, limit: int) -> list[tuple[str, str]]:
    query = (
        select(_game.c.tenant_id, _game.c.id)
        .where(_game.c.turn_deadline_at.is_not(None), _game.c.turn_deadline_at <= now)
        .order_by(_game.c.turn_deadline_at)
        .limit(limit)
    )
    return [(row.tenant_id, row.id) for row in session.execute(query)]


def get_table(session: Session, tenant_id: str, table_id: str, *, for_update: bool = False) -> GameTable:
    query = select(GameTable).where(GameTable.id == table_id, GameTable.tenant_id == tenant_id)
    if for_update:
        query = query.with_for_update(key_share=True)
    table = session.scalars(query).one_or_none()
    if table is None:
        raise NotFound(f"no table {table_id}")
    return table


def games_of_table(session: Session, table_id: str) -> list[GameRecord]:
    rows = session.execute(select(_game).where(_game.c.table_id == table_id).order_by(_game.c.round_number))
    return [GameRecord(**row._mapping) for row in rows]


def _seat_values(game_id: str, seat: SeatRecord) -> dict[str, Any]:
    return {
        "game_id": game_id,
        "seat": seat.seat,
        "account_id": seat.account_id,
        "client_seed": seat.client_seed,
        "client_seed_source": seat.client_seed_source,
    }
