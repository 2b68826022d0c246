"""The dealer's one way in: every game write and read the HTTP layer, the CLI and the tests call.

Each function works in the caller's transaction (it flushes, never commits) and answers a typed thing:
the documented answer (pokna.dealer.schemas) or, for the sweep, plain counts and ids. Where the work
lives: creating (creating.py), acting (acting.py), one rules step persisted (stepping.py), deadlines
(deadlines.py), reading (reading.py), the public fairness link (fairness_link.py), tables (tables.py); storage behind pokna.dealer.store.
"""

from __future__ import annotations

from pokna.dealer.creating import NewGame, check_seating, create_game
from pokna.dealer.deadlines import Clock, apply_due_timeouts, due_games, overdue_games
from pokna.dealer.fairness_link import fairness_link
from pokna.dealer.playing import Caller, Keyed, Played, play, revenue_account_opener
from pokna.dealer.rake import RakeTerms
from pokna.dealer.reading import AuditedGame, game_events, game_proof, games_for_audit, read_game
from pokna.dealer.records import OverdueGames
from pokna.dealer.requests import PlayerRequest
from pokna.dealer.tables import NewTable, create_table, deal_round, read_table

__all__ = [
    "AuditedGame",
    "Caller",
    "Clock",
    "Keyed",
    "NewGame",
    "NewTable",
    "OverdueGames",
    "Played",
    "PlayerRequest",
    "RakeTerms",
    "apply_due_timeouts",
    "check_seating",
    "create_game",
    "create_table",
    "deal_round",
    "due_games",
    "fairness_link",
    "game_events",
    "game_proof",
    "games_for_audit",
    "overdue_games",
    "play",
    "read_game",
    "read_table",
    "revenue_account_opener",
]
