"""The card's worked example over HTTP: the colours its rolls show, the players' client seeds, and the Vigo
seed that makes a game's server seed roll exactly those colours (so a real game can replay the card)."""

from __future__ import annotations

from typing import Any

from pokna_verify.fairness.protocol import game_client_seed, roll
from support.tenant_api import TenantApi

# The favor roll, the four players' first rolls, the second pass after the vote to roll again, then the
# challenge: the Vigo's new favor and player 1's roll.
CARD_ROLLS = ["red", "red", "blue", "blue", "red", "red", "blue", "red", "blue"]
PLAYER_SEEDS = ["p1-seed", "p2-seed", "p3-seed", "p4-seed"]


def vigo_seed_giving_card_rolls(server_seed: str) -> str:
    for attempt in range(100_000):
        candidate = f"vigo-{attempt}"
        client_seed = game_client_seed([candidate, *PLAYER_SEEDS])
        if all(
            roll(server_seed, client_seed, nonce).color == color for nonce, color in enumerate(CARD_ROLLS)
        ):
            return candidate
    raise AssertionError("no Vigo seed reproduces the card's rolls")


def act(api: TenantApi, game_id: str, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(f"/v1/games/{game_id}/actions", body)
    assert response.status_code == 200, response.text
    game: dict[str, Any] = response.json()
    return game
