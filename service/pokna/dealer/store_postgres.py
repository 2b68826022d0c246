"""The game store: the statements every action runs under the game's lock, made one round trip each (the lock
and its reads, the step's write, the new game, the proof's events and rolls). The shorter that critical
section, the more actions a game and the ledger take.

Each is one statement with a fixed text whatever the row counts (but a new game's, below), so psycopg prepares
it once per connection; it is sent as that driver text, so SQLAlchemy has nothing to compile per call.

Rows travel as JSON both ways, adapted by the C JSON codec instead of one parameter or one column per field,
but for a new game's (one parameter per value, for Citus: `insert_game_statements`). A step's write sends a
table's rows as one parameter that json_populate_record(set) expands into the table's own row type: a JSON
null becomes SQL NULL and a nested value lands in a json column as the encoder wrote it (no string in it may
hold U+0000: see encode_rows). A read returns a record as a JSON array, its timestamps as ISO 8601 text. Only
constant table and column names are formatted into these statements; every value is bound.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg import AsyncConnection, AsyncCursor

from pokna.dealer.records import (
    GAME_COLUMNS,
    EventRecord,
    GameRecord,
    RollRecord,
    SeatRecord,
    event_rows,
    game_row,
    seat_row,
)
from pokna.errors import NotFound
from pokna_verify.invariant import present

_SEAT_COLUMNS = ("tenant_id", "game_id", "seat", "account_id", "client_seed", "client_seed_source")
_EVENT_COLUMNS = ("tenant_id", "game_id", "seq", "kind", "payload", "occurred_at")
_GAME_TIMESTAMPS = ("turn_deadline_at", "created_at", "started_at", "ended_at")
_GAME_TIMESTAMP_INDEXES = tuple(GAME_COLUMNS.index(name) for name in _GAME_TIMESTAMPS)


def _names(table: str, columns: Sequence[str]) -> str:
    return ", ".join(f"{table}.{name}" for name in columns)


# The game row as one array in GameRecord's order, the version the statement's snapshot saw, and the
# seats with their wallets' balances, in one round trip (pokna.dealer.action.locked.LOCK_FOR_ACTION extends it).
#
# The one deliberate exception to reading another domain only through its public functions: this statement
# reads the seats' `account.balance` itself, because a separate read of the ledger's account summaries would be
# one more round trip while the game's lock is held, on every action. It reads the column the ledger keeps,
# without the ledger's lock, exactly what that read would; the ledger checks it again when
# money moves (expected balances).
#
# A statement's snapshot is taken before it waits for the row lock, so seats read by the same statement may
# predate a change committed while it waited; the locked game row itself is the latest. Every seat change
# bumps the game's version, so when the locked version is the one the snapshot saw, the seats read are
# current; otherwise `locked_records` gives no seats and the transaction locks again (only when two requests
# raced).
LOCK_GAME_AND_SEATS = (
    f"SELECT json_build_array({_names('game', GAME_COLUMNS)}), "  # noqa: S608
    "(SELECT seen.version FROM game AS seen WHERE seen.tenant_id = %(tenant_id)s AND seen.id = %(game_id)s), "
    "(SELECT json_agg(json_build_array(game_seat.seat, game_seat.account_id, game_seat.client_seed, "
    "game_seat.client_seed_source, account.balance) ORDER BY game_seat.seat) "
    "FROM game_seat JOIN account ON account.tenant_id = game_seat.tenant_id AND account.id = game_seat.account_id "
    "WHERE game_seat.tenant_id = %(tenant_id)s AND game_seat.game_id = %(game_id)s) "
    "FROM game WHERE game.id = %(game_id)s AND game.tenant_id = %(tenant_id)s FOR NO KEY UPDATE OF game"
)


GAME_AND_SEATS = LOCK_GAME_AND_SEATS.removesuffix(" FOR NO KEY UPDATE OF game")
"""The same row without the lock: what a read of the game (GET) answers from, as committed. One snapshot,
so the version seen is the game's and the seats always come with it."""

EVENT_PAGE = (
    "SELECT seq, kind, payload, occurred_at FROM game_event "
    "WHERE tenant_id = %(tenant_id)s AND game_id = %(game_id)s AND seq > %(after)s ORDER BY seq LIMIT %(limit)s"
)


@dataclass(frozen=True)
class GameRead:
    """A game as a read finds it: its row, its seats with their wallets' balances, and the page of its
    events the read asked for (else none)."""

    game: GameRecord
    seats: list[SeatRecord]
    balances: dict[str, int]
    events: list[EventRecord]


@dataclass(frozen=True)
class QueuedRead:
    """A read's statements, sent (in the caller's pipeline, maybe) and not yet fetched."""

    game_id: str
    game: AsyncCursor[Any]
    events: AsyncCursor[Any] | None


async def queue_read(
    connection: AsyncConnection[Any], tenant_id: str, game_id: str, page: tuple[int, int] | None
) -> QueuedRead:
    """The game with its seats and, if `page` (after which `seq`, how many) is given, that page of its
    events: one round trip, or none more in the caller's pipeline."""
    params = {"tenant_id": tenant_id, "game_id": game_id}
    game = await connection.execute(GAME_AND_SEATS, params)
    if page is None:
        return QueuedRead(game_id, game, None)
    after, limit = page
    events = await connection.execute(EVENT_PAGE, {**params, "after": after, "limit": limit})
    return QueuedRead(game_id, game, events)


async def fetched_read(queued: QueuedRead) -> GameRead:
    """`queued`'s rows as records, once sent; another tenant's game is as absent as none (NotFound)."""
    row = await queued.game.fetchone()
    if row is None:
        raise NotFound(f"no game {queued.game_id}")
    game, found_seats, balances = locked_records(*row)
    seats = present(found_seats, "the game's seats (one statement, one snapshot)")
    events = [] if queued.events is None else await queued.events.fetchall()
    return GameRead(
        game,
        seats,
        balances,
        [EventRecord(seq, kind, payload, at.astimezone(UTC)) for seq, kind, payload, at in events],
    )


# A new game's rows go in as `INSERT ... VALUES`, every value bound, the tenant's one parameter shared by
# all rows: Citus routes such a statement straight to the tenant's shard. An `INSERT ... SELECT` from a JSON
# document (as a step's events and rolls are written by `game_write()`) is run by Citus as a COPY into the shard, and a
# COPY always commits in two phases: every creation did, even one whose public link is on the tenant's own
# worker (issue 45). The seats' and events' statements have one text per row count (two to a few seats, one
# event), each prepared once per connection.
_JSON_COLUMNS = frozenset({"state", "receipt", "proof", "pending_roll", "payload"})


def _value(column: str, row: int | None) -> str:
    if column == "tenant_id":
        return "%(tenant_id)s"
    name = column if row is None else f"{column}_{row}"
    return f"CAST(%({name})s AS json)" if column in _JSON_COLUMNS else f"%({name})s"


def _insert_values(table: str, columns: Sequence[str], rows: int | None) -> str:
    """`rows` None: one row, its parameters named as its columns; else `rows` rows, `{column}_{row}`."""
    names = ", ".join(columns)
    tuples = ", ".join(
        f"({', '.join(_value(column, row) for column in columns)})"
        for row in ([None] if rows is None else range(rows))
    )
    return f"INSERT INTO {table} ({names}) VALUES {tuples}"  # noqa: S608


def _bound(values: dict[str, Any], row: int | None = None) -> dict[str, Any]:
    """A row's values as the parameters of `_insert_values`: JSON columns as their encoded text."""
    suffix = "" if row is None else f"_{row}"
    return {
        f"{column}{suffix}": encode_rows(value) if column in _JSON_COLUMNS and value is not None else value
        for column, value in values.items()
        if column != "tenant_id"
    }


_INSERT_GAME = _insert_values("game", GAME_COLUMNS, None)

# Which tenant a public link belongs to: on Citus distributed by the token (pokna.db.distribution), so a
# statement of its own, apart from the game's, which touch the tenant's shard alone.
_INSERT_GAME_LINK = "INSERT INTO game_link (public_token, tenant_id) VALUES (%(public_token)s, %(tenant_id)s)"

RECORDED_FOR_PROOF = (
    "SELECT (SELECT json_agg(json_build_array(seq, kind, payload, occurred_at) ORDER BY seq) "
    "FROM game_event WHERE game_event.tenant_id = %(tenant_id)s AND game_id = %(game_id)s "
    "AND kind = ANY(%(kinds)s)), "
    "(SELECT json_agg(json_build_array(nonce, seat, purpose, face, color, rolled_at, accepted_at, beacon) "
    "ORDER BY nonce) "
    "FROM game_roll WHERE game_roll.tenant_id = %(tenant_id)s AND game_id = %(game_id)s)"
)


def insert_game_statements(
    game: GameRecord, seats: Sequence[SeatRecord], events: Sequence[EventRecord]
) -> list[tuple[str, dict[str, Any]]]:
    """The statements that insert a new game (the async creation pipelines them: pokna.dealer.creating)."""
    tenant = {"tenant_id": game.tenant_id}
    seat_params, event_params = dict(tenant), dict(tenant)
    for row, seat in enumerate(seats):
        seat_params.update(_bound(seat_row(game.tenant_id, game.id, seat), row))
    for row, event in enumerate(event_rows(game.tenant_id, game.id, events)):
        event_params.update(_bound(event, row))
    statements = [
        (_INSERT_GAME, {**tenant, **_bound(game_row(game))}),
        (_insert_values("game_seat", _SEAT_COLUMNS, len(seats)), seat_params),
    ]
    if events:
        statements.append((_insert_values("game_event", _EVENT_COLUMNS, len(events)), event_params))
    if game.public_token is not None:
        statements.append(
            (_INSERT_GAME_LINK, {"public_token": game.public_token, "tenant_id": game.tenant_id})
        )
    return statements


def recorded_records(
    events: list[list[Any]] | None, rolls: list[list[Any]] | None
) -> tuple[list[EventRecord], list[RollRecord]]:
    """RECORDED_FOR_PROOF's row as records."""
    return (
        [EventRecord(seq, kind, payload, _timestamp(at)) for seq, kind, payload, at in events or ()],
        [
            RollRecord(nonce, seat, purpose, face, color, _timestamp(at), accepted_at, beacon)
            for nonce, seat, purpose, face, color, at, accepted_at, beacon in rolls or ()
        ],
    )


def locked_records(
    game_values: list[Any], seen_version: int, seat_rows: list[list[Any]]
) -> tuple[GameRecord, list[SeatRecord] | None, dict[str, int]]:
    """LOCK_GAME_AND_SEATS's row as records. The seats are None when the locked game is newer than the
    statement's snapshot (two requests raced): the caller reads them again."""
    game = _game_record(game_values)
    if seen_version != game.version:
        return game, None, {}
    return (
        game,
        [SeatRecord(seat, account_id, seed, source) for seat, account_id, seed, source, _ in seat_rows],
        {account_id: int(balance) for _, account_id, _, _, balance in seat_rows},
    )


def _game_record(game_values: list[Any]) -> GameRecord:
    values = list(game_values)  # the row stays as read: a caller may build the records again from it
    for index in _GAME_TIMESTAMP_INDEXES:
        if values[index] is not None:
            values[index] = _timestamp(values[index])
    return GameRecord(*values)


_LINK_TENANT = "SELECT tenant_id FROM game_link WHERE public_token = %(token)s"
_LINKED_GAME_AND_SEATS = (
    f"SELECT json_build_array({_names('game', GAME_COLUMNS)}), "  # noqa: S608
    "(SELECT json_agg(json_build_array(game_seat.seat, game_seat.account_id, game_seat.client_seed, "
    "game_seat.client_seed_source) ORDER BY game_seat.seat) FROM game_seat "
    "WHERE game_seat.tenant_id = %(tenant_id)s AND game_seat.game_id = game.id) "
    "FROM game WHERE game.tenant_id = %(tenant_id)s AND game.public_token = %(token)s"
)


async def linked_game(connection: AsyncConnection[Any], token: str) -> tuple[GameRecord, list[SeatRecord]]:
    """The game whose public fairness link carries `token`, whatever its tenant (NotFound if none), and its
    seats: the tenant from `game_link` (on Citus, distributed by the token: one shard), then the game and
    its seats in one statement (one snapshot) on that tenant's shard. Two round trips and no transaction:
    a link is committed with its game and never changes."""
    link = await (await connection.execute(_LINK_TENANT, {"token": token})).fetchone()
    values = {"tenant_id": None if link is None else link[0], "token": token}
    row = (
        None if link is None else await (await connection.execute(_LINKED_GAME_AND_SEATS, values)).fetchone()
    )
    if row is None:
        raise NotFound("no such fairness link")
    game_values, seat_rows = row
    return _game_record(game_values), [SeatRecord(*seat) for seat in seat_rows or ()]


def encode_rows(rows: Any) -> str:
    """Rows (or a document of them: pokna.dealer.writes) as the compact JSON the statements read."""
    encoded = _ENCODER.encode(rows)
    # json_populate_record turns every JSON string into text, even inside a json column, and text cannot
    # hold U+0000. No game value can carry one today (the API refuses it, client seeds are [A-Za-z0-9._~-]);
    # should one ever, it is refused here by name rather than by the database.
    if "\\u0000" in encoded and _NUL_ESCAPE.search(encoded):
        raise ValueError("a game row holds the NUL character (U+0000), which PostgreSQL text cannot store")
    return encoded


def _iso_timestamp(value: object) -> str:
    if not isinstance(value, datetime):
        raise TypeError(f"{type(value).__name__} is not JSON serializable")
    if value.tzinfo is None:
        raise ValueError("naive datetime; Pokna stores only timezone-aware UTC")
    return value.isoformat()


_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")  # an escaped U+0000, not an escaped backslash + "u0000"
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=_iso_timestamp)


def _timestamp(value: str) -> datetime:
    """PostgreSQL writes a timestamptz into JSON as ISO 8601 with the session's offset."""
    return datetime.fromisoformat(value).astimezone(UTC)


DEADLINE_AND_ROUND = (
    "SELECT turn_deadline_at, (pending_roll ->> 'beacon_round')::bigint FROM game "
    "WHERE tenant_id = %(tenant_id)s AND id = %(game_id)s"
)
"""A game's deadline and the beacon round its waiting roll needs, read without a lock: whether a touch
(the sweep's) has anything to apply, and which round to fetch before it locks the game."""

INSERT_TABLE = (
    "INSERT INTO game_table (id, tenant_id, account_ids, stake, challenge_raise, currency, turn_timeout_seconds, "
    "rounds_played, rake_bps, rake_cap, created_at) VALUES (%(id)s, %(tenant_id)s, %(account_ids)s, %(stake)s, "
    "%(challenge_raise)s, %(currency)s, %(turn_timeout_seconds)s, %(rounds_played)s, %(rake_bps)s, "
    "%(rake_cap)s, %(created_at)s)"
)
"""A new table (pokna.dealer.tables.create_table); `account_ids` as JSON."""

TABLE_FOR_ROUND = (
    "SELECT account_ids, stake, challenge_raise, currency, turn_timeout_seconds, rake_bps, rake_cap, "
    "rounds_played FROM game_table WHERE tenant_id = %(tenant_id)s AND id = %(table_id)s FOR NO KEY UPDATE"
)
"""A table locked for its next round: one round at a time."""

LAST_ROUND = (
    "SELECT id, status, turn_deadline_at, pending_roll IS NOT NULL, round_number FROM game "
    "WHERE tenant_id = %(tenant_id)s AND table_id = %(table_id)s ORDER BY round_number DESC LIMIT 1"
)
"""The table's last round, read by a statement of its own after TABLE_FOR_ROUND in the same pipeline: its
snapshot is taken once the table's lock is held, so it sees a round another request dealt meanwhile."""

TABLE_ROUND_DEALT = (
    "UPDATE game_table SET rounds_played = rounds_played + 1 "
    "WHERE tenant_id = %(tenant_id)s AND id = %(table_id)s"
)
