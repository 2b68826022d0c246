"""The game's closed sets of words as the API and the webhooks state them, declared once so that a REST
answer and the webhook about the same change list the same values (issue 26): a generated client gets one
enum, not a string in one place and an enum in another. Plain `Literal`s: the wire carries the strings."""

from __future__ import annotations

from typing import Literal

from pokna_verify.game.actions import TurnAction as TurnAction  # named beside the rules' actions

GameStatus = Literal["open", "in_progress", "settled", "cancelled"]
DefaultAction = Literal["cancel", "roll", "claim", "split"]
OutcomeReason = Literal[
    "no_survivors", "claimed", "challenge_won", "challenge_lost", "split", "vigo_bust", "cancelled"
]
CubeColor = Literal["red", "blue"]
RollPurposeName = Literal["favor", "seek", "challenge_favor", "challenge"]
SeedSourceName = Literal["player", "server"]
