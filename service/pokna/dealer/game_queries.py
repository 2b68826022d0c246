"""A game's rows as the action's statements send them (pokna.dealer.store_postgres, pokna.dealer.writes),
and the events a proof is made of."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pokna.dealer.records import (
    ACTION_EVENT,
    GAME_COLUMNS,
    MONEY_EVENT,
    MUTABLE_GAME_COLUMNS,
    EventRecord,
    GameRecord,
    RollRecord,
    SeatRecord,
)

PROOF_EVENTS = (ACTION_EVENT, MONEY_EVENT)


# --- rows, as the action's statements send them --------------------------------------------------------------


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
