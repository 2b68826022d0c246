"""The dealer's one way in: every game write and read the HTTP layer, the CLI, the sweep and the tests call.

All are async, on the driver. Each write is one transaction cut the same way (what is read under the lock
-> a decision -> the writes): creating a game (creating.py), a table and its rounds (tables.py), acting,
resolving a beacon roll and applying passed deadlines (action/game_action.py). Reads go on the caller's
connection (reading.py, overdue.py, fairness_link.py); storage in pokna.dealer.store_postgres.
"""

from __future__ import annotations

from pokna.dealer.action.action_transaction import Dealer
from pokna.dealer.action.game_action import DueApplied, act, apply_due, catch_up
from pokna.dealer.action.locked import Clock
from pokna.dealer.creating import NewGame, create_game
from pokna.dealer.fairness_link import fairness_link
from pokna.dealer.overdue import OverdueGames, due_games, overdue_games
from pokna.dealer.rake import RakeTerms
from pokna.dealer.reading import (
    AuditedGame,
    game_events,
    game_proof,
    games_for_audit,
    read_game,
    read_table,
)
from pokna.dealer.requests import PlayerRequest
from pokna.dealer.tables import NewTable, create_table, deal_round
from pokna.idempotency.keyed import Answer, Caller, Keyed

__all__ = [
    "Answer",
    "AuditedGame",
    "Caller",
    "Clock",
    "Dealer",
    "DueApplied",
    "Keyed",
    "NewGame",
    "NewTable",
    "OverdueGames",
    "PlayerRequest",
    "RakeTerms",
    "act",
    "apply_due",
    "catch_up",
    "create_game",
    "create_table",
    "deal_round",
    "due_games",
    "fairness_link",
    "game_events",
    "game_proof",
    "games_for_audit",
    "overdue_games",
    "read_game",
    "read_table",
]
