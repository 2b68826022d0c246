"""Dice chosen by the test: the client seeds that make a game's first rolls come out in given colours, found
from its server seed (the test plays the operator, who alone can open it). For a test whose assertions need
a situation of the rules (a vote, a lone survivor) that random dice only make likely."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.game import Game as GameRow
from pokna.runtime import Runtime
from pokna_verify.fairness.protocol import game_client_seed, roll
from pokna_verify.fairness.seed_vault import open_server_seed
from support.game_play import Api, Game


def steering_seeds(
    sessions: sessionmaker[Session], runtime: Runtime, game: Mapping[str, Any], colors: Sequence[str]
) -> list[str]:
    """The client seed of each seat of `game` (Vigo's first) that make its rolls 0, 1, ... `colors`."""
    with sessions() as session:
        row = session.scalars(select(GameRow).where(GameRow.id == game["id"])).one()
        server_seed = open_server_seed(row.sealed_server_seed, runtime.keys.seed_key, row.id)
    players = [f"seat-{seat['seat']}" for seat in game["seats"][1:]]
    vigo = next(
        (
            f"vigo-{attempt}"
            for attempt in range(100_000)
            if all(
                roll(server_seed, game_client_seed([f"vigo-{attempt}", *players]), nonce).color == color
                for nonce, color in enumerate(colors)
            )
        ),
        None,
    )
    assert vigo is not None, f"no client seed gives {colors}"
    return [vigo, *players]


def steer(
    api: Api, sessions: sessionmaker[Session], runtime: Runtime, game: Game, colors: Sequence[str]
) -> Game:
    """`game`, not started yet, with the client seeds set that make its rolls 0, 1, ... `colors`."""
    for seat, seed in zip(game["seats"], steering_seeds(sessions, runtime, game, colors), strict=True):
        body = {"type": "set_client_seed", "account_id": seat["account_id"], "client_seed": seed}
        game = api.ok(api.act(game["id"], body))
    return game
