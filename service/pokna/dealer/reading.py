"""Reading games: the game (GET /v1/games/{id}), a page of its events, its proof; async, on the one
connection the request holds, no session and no thread.

A read is also a touch: a deadline passed since the last one is applied first, so what a client reads is
the game as of now. The read finds it in what it read, applies it on the same connection as every write
does (pokna.dealer.action.game_action.catch_up), then reads again, as committed.

The API key's check and the read go in one round trip: the read is sent under the tenant the process
remembers for the key, beside its check (pokna.tenants.authentication), and only a key not remembered
yet costs one round trip more, once (`authentication.read_beside`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from psycopg import AsyncConnection, AsyncCursor

from pokna.dealer.action.action_transaction import Dealer
from pokna.dealer.action.game_action import catch_up
from pokna.dealer.action.locked import Clock
from pokna.dealer.records import TABLE_COLUMNS, RoundRecord, TableRecord
from pokna.dealer.schemas import GameEventOut, GameOut, GameProofOut, TableOut
from pokna.dealer.store_postgres import GameRead, fetched_read, queue_read
from pokna.dealer.view import event_out, game_out, proof_out, table_out
from pokna.errors import NotFound
from pokna.idempotency.keyed import Caller
from pokna.paging import Page, page_of
from pokna.tenants import authentication
from pokna_verify.invariant import present


async def read_game(
    connection: AsyncConnection[Any], dealer: Dealer, clock: Clock, caller: Caller, game_id: str
) -> GameOut:
    read = await _as_of(connection, dealer, clock, caller, game_id, None)
    return game_out(read.game, read.seats, read.balances)


async def game_events(
    connection: AsyncConnection[Any],
    dealer: Dealer,
    clock: Clock,
    caller: Caller,
    game_id: str,
    *,
    limit: int,
    after: int,
) -> Page[GameEventOut]:
    """The game's events in order, `limit` at a time; the cursor is the last event's `seq`."""
    read = await _as_of(connection, dealer, clock, caller, game_id, (after, limit + 1))
    return page_of([event_out(event) for event in read.events], limit, lambda event: str(event.root.seq))


async def game_proof(
    connection: AsyncConnection[Any], dealer: Dealer, clock: Clock, caller: Caller, game_id: str
) -> GameProofOut:
    """The signed proof once the game is over; before that, only the signed commitment."""
    read = await _as_of(connection, dealer, clock, caller, game_id, None)
    return proof_out(read.game)


async def _as_of(
    connection: AsyncConnection[Any],
    dealer: Dealer,
    clock: Clock,
    caller: Caller,
    game_id: str,
    page: tuple[int, int] | None,
) -> GameRead:
    """The game (and `page` of its events) as of `clock.now`: as committed, or, if one of its deadlines
    has passed by then, once that is applied. A waiting beacon roll is not a deadline to apply."""
    tenant_id, read = await _first_read(connection, caller, game_id, page)
    deadline = read.game.turn_deadline_at
    if read.game.pending_roll is not None or deadline is None or deadline > clock.now:
        return read
    await catch_up(connection, dealer, clock, tenant_id, game_id)
    return await _read(connection, tenant_id, game_id, page)


async def _first_read(
    connection: AsyncConnection[Any], caller: Caller, game_id: str, page: tuple[int, int] | None
) -> tuple[str, GameRead]:
    if caller.tenant_id is not None:
        return caller.tenant_id, await _read(connection, caller.tenant_id, game_id, page)
    digest = present(caller.api_key_digest, "a key's digest when the tenant is not yet known")
    tenant_id, queued = await authentication.read_beside(
        connection, digest, lambda tenant_id: queue_read(connection, tenant_id, game_id, page)
    )
    return tenant_id, await fetched_read(queued)


async def _read(
    connection: AsyncConnection[Any], tenant_id: str, game_id: str, page: tuple[int, int] | None
) -> GameRead:
    async with connection.pipeline():
        queued = await queue_read(connection, tenant_id, game_id, page)
    return await fetched_read(queued)


TABLE = (
    f"SELECT {', '.join(TABLE_COLUMNS)} FROM game_table "  # noqa: S608
    "WHERE tenant_id = %(tenant_id)s AND id = %(table_id)s"
)
TABLE_ROUNDS = (
    "SELECT game.id, game.round_number, game.status, game.state, "
    "(SELECT json_agg(json_build_array(game_seat.seat, game_seat.account_id) ORDER BY game_seat.seat) "
    "FROM game_seat WHERE game_seat.tenant_id = %(tenant_id)s AND game_seat.game_id = game.id) "
    "FROM game WHERE game.tenant_id = %(tenant_id)s AND game.table_id = %(table_id)s ORDER BY game.round_number"
)
"""The table's games in the order they were dealt, each with its seats' (seat, account id) in seat order."""


async def read_table(connection: AsyncConnection[Any], api_key_digest: str, table_id: str) -> TableOut:
    """The table and its rounds as committed (a round's passed deadline is applied by whoever touches
    that game, not by reading its table); another tenant's table is as absent as none (NotFound)."""

    async def queue(tenant_id: str) -> tuple[AsyncCursor[Any], AsyncCursor[Any]]:
        values = {"tenant_id": tenant_id, "table_id": table_id}
        return await connection.execute(TABLE, values), await connection.execute(TABLE_ROUNDS, values)

    _, (table, rounds) = await authentication.read_beside(connection, api_key_digest, queue)
    row = await table.fetchone()
    if row is None:
        raise NotFound(f"no table {table_id}")
    values = dict(zip(TABLE_COLUMNS, row, strict=True))
    return table_out(
        TableRecord(**{**values, "created_at": values["created_at"].astimezone(UTC)}),
        [
            RoundRecord(game_id, round_number, status, state, [(seat, account) for seat, account in seats])
            for game_id, round_number, status, state, seats in await rounds.fetchall()
        ],
    )


@dataclass(frozen=True)
class AuditedGame:
    """What an audit bundle says of a game: its status, its pot account and, once it ended, its proof."""

    game_id: str
    status: str
    pot_account_id: str
    proof: dict[str, Any] | None


_GAMES_FOR_AUDIT = (
    "SELECT id, status, pot_account_id, proof FROM game WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s)"
)


async def games_for_audit(
    connection: AsyncConnection[Any], tenant_id: str, game_ids: Sequence[str]
) -> dict[str, AuditedGame]:
    """The tenant's games among `game_ids`, as stored (an audit reads, it does not apply deadlines)."""
    if not game_ids:
        return {}
    found = await connection.execute(_GAMES_FOR_AUDIT, {"tenant_id": tenant_id, "ids": list(game_ids)})
    return {row[0]: AuditedGame(*row) for row in await found.fetchall()}
