"""A game and its seats as the service works on them: plain rows, read and written by the store's
statements (pokna.dealer.store_postgres).

An action is one short critical section under the game's row lock, so the shell stays thin: the ORM's
identity map and change tracking cost more than the rules step itself. The records are values: a
rules step makes the game after it with `dataclasses.replace`, and the game's writes
(pokna.dealer.writes.GameWrites.save_step) send its mutable columns back, as the rows below, with the
step's events and rolls, in the one call to game_write().
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class GameRecord:
    id: str
    tenant_id: str
    table_id: str | None
    round_number: int | None
    status: str
    stake: int
    challenge_raise: int
    currency: str
    turn_timeout_seconds: int
    pot_account_id: str
    state: dict[str, Any]
    version: int
    event_count: int
    server_seed_hash: str
    sealed_server_seed: str
    revealed_server_seed: str | None
    game_client_seed: str | None
    receipt: dict[str, Any]
    proof: dict[str, Any] | None
    public_token: str | None
    turn_deadline_at: datetime | None
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    pending_roll: dict[str, Any] | None = None
    """Beacon mode: the drawing action accepted and waiting for its round (pokna.dealer.beacon_rolls)."""
    log_index: int | None = None
    """The game's leaf in its tenant's public log, once logged (pokna.public_log); no action writes it."""


GAME_COLUMNS = tuple(field.name for field in fields(GameRecord))

# What an action may change; the rest of the row is fixed when the game is created.
MUTABLE_GAME_COLUMNS = (
    "status",
    "state",
    "version",
    "event_count",
    "revealed_server_seed",
    "game_client_seed",
    "proof",
    "turn_deadline_at",
    "started_at",
    "ended_at",
)


@dataclass(frozen=True, slots=True)
class SeatRecord:
    seat: int
    account_id: str
    client_seed: str | None
    client_seed_source: str | None


# The event kinds a proof is built from: each action as it was decided, and each money move it made.
ACTION_EVENT = "action"
MONEY_EVENT = "money_moved"
PROOF_EVENTS = (ACTION_EVENT, MONEY_EVENT)


@dataclass(frozen=True, slots=True)
class EventRecord:
    seq: int
    kind: str
    payload: dict[str, Any]
    occurred_at: datetime


@dataclass(frozen=True, slots=True)
class RollRecord:
    nonce: int
    seat: int
    purpose: str
    face: int
    color: str
    rolled_at: datetime
    accepted_at: str | None = None
    """Beacon mode: when the action that drew the roll was accepted, and the round it used."""
    beacon: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class TableRecord:
    """A table's row, as its answer shows it."""

    id: str
    account_ids: list[str]
    stake: int
    challenge_raise: int
    currency: str
    turn_timeout_seconds: int
    rounds_played: int
    rake_bps: int
    rake_cap: int | None
    created_at: datetime


TABLE_COLUMNS = tuple(field.name for field in fields(TableRecord))


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """A table's round as its answer shows it: the game, and its seats' accounts in seat order."""

    game_id: str
    round_number: int | None
    status: str
    state: dict[str, Any]
    seats: list[tuple[int, str]]


# --- the records as rows, as the action's statements send them (store_postgres, writes) ---------------------


def game_row(game: GameRecord) -> dict[str, Any]:
    return {name: getattr(game, name) for name in GAME_COLUMNS}


def mutable_game_values(game: GameRecord) -> dict[str, Any]:
    return {name: getattr(game, name) for name in MUTABLE_GAME_COLUMNS}


def seat_row(tenant_id: str, game_id: str, seat: SeatRecord) -> dict[str, Any]:
    return {
        "tenant_id": tenant_id,
        "game_id": game_id,
        "seat": seat.seat,
        "account_id": seat.account_id,
        "client_seed": seat.client_seed,
        "client_seed_source": seat.client_seed_source,
    }


def event_rows(tenant_id: str, game_id: str, events: Sequence[EventRecord]) -> list[dict[str, Any]]:
    return [
        {
            "tenant_id": tenant_id,
            "game_id": game_id,
            "seq": event.seq,
            "kind": event.kind,
            "payload": event.payload,
            "occurred_at": event.occurred_at,
        }
        for event in events
    ]


def roll_rows(tenant_id: str, game_id: str, rolls: Sequence[RollRecord]) -> list[dict[str, Any]]:
    return [
        {
            "tenant_id": tenant_id,
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
