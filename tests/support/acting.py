"""A game action through the dealer's one way in (pokna.dealer.playing.play, the async path the API
serves), for tests that act below HTTP: on the runtime's async connections, for a tenant already known."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from psycopg import AsyncConnection
from pydantic import TypeAdapter

from pokna.dealer import service as games
from pokna.dealer.creating_aio import create_game
from pokna.dealer.requests import GameAction
from pokna.dealer.schemas import GameActionOut
from pokna.runtime import Runtime


def act(
    runtime: Runtime, clock: games.Clock, tenant_id: str, game_id: str, request: games.PlayerRequest
) -> GameActionOut:
    async def play() -> games.Played:
        async with runtime.aio.connection() as connection:
            return await games.play(
                connection,
                runtime.keys,
                clock,
                games.Caller(tenant_id=tenant_id),
                None,
                game_id,
                request,
                games.revenue_account_opener(runtime.engine),
            )

    return GameActionOut.model_validate_json(asyncio.run(play()).body)


# --- whole games below HTTP, for tests that play many at once ----------------------------------------------

_ACTIONS: TypeAdapter[games.PlayerRequest] = TypeAdapter(GameAction)


async def create_game_now(
    runtime: Runtime,
    clock: games.Clock,
    tenant_id: str,
    terms: games.NewGame,
    connection: AsyncConnection[Any] | None = None,
) -> dict[str, Any]:
    """A new game through the dealer's async creation (pokna.dealer.creating_aio, what POST /v1/games
    calls), answered as the route answers it."""
    if connection is None:
        async with runtime.aio.connection() as own:
            return await create_game_now(runtime, clock, tenant_id, terms, own)
    created = await create_game(
        connection, runtime.keys, clock, games.Caller(tenant_id=tenant_id), None, terms
    )
    assert created.status == 201, created.body
    game: dict[str, Any] = json.loads(created.body)
    return game


async def play_now(
    runtime: Runtime,
    clock: games.Clock,
    tenant_id: str,
    game: dict[str, Any],
    policy: Callable[[dict[str, Any]], dict[str, Any]],
    connection: AsyncConnection[Any] | None = None,
    max_steps: int = 400,
) -> dict[str, Any]:
    """`game` acted on until it ends, each action `policy`'s (support.game_play's policies), through the
    dealer's one way in; every action must apply."""
    if connection is None:
        async with runtime.aio.connection() as own:
            return await play_now(runtime, clock, tenant_id, game, policy, own, max_steps)
    opener = games.revenue_account_opener(runtime.engine)
    for _ in range(max_steps):
        if game["status"] in ("settled", "cancelled"):
            return game
        request = _ACTIONS.validate_python(policy(game))
        played = await games.play(
            connection,
            runtime.keys,
            clock,
            games.Caller(tenant_id=tenant_id),
            None,
            game["id"],
            request,
            opener,
        )
        assert played.status == 200, played.body
        game = json.loads(played.body)
    raise AssertionError(f"game {game['id']} did not end within {max_steps} actions")
