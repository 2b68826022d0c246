"""Games created and acted on through the dealer's one way in (pokna.dealer.creating.create_game and
pokna.dealer.action.game_action.act, the async path the API serves), for tests below HTTP: on the runtime's async
connections, for a tenant already known."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from psycopg import AsyncConnection
from pydantic import TypeAdapter

from pokna.dealer import service as games
from pokna.dealer.requests import GameAction
from pokna.dealer.schemas import GameActionOut, GameOut, GameProofOut
from pokna.runtime import Runtime


def dealer_of(runtime: Runtime) -> games.Dealer:
    return games.Dealer(runtime.keys)


def act(
    runtime: Runtime, clock: games.Clock, tenant_id: str, game_id: str, request: games.PlayerRequest
) -> GameActionOut:
    async def play() -> games.Answer:
        async with runtime.aio.connection() as connection:
            return await games.act(
                connection,
                dealer_of(runtime),
                clock,
                games.Caller(tenant_id=tenant_id),
                None,
                game_id,
                request,
            )

    return GameActionOut.model_validate_json(asyncio.run(play()).body)


def create_game(runtime: Runtime, clock: games.Clock, tenant_id: str, terms: games.NewGame) -> dict[str, Any]:
    """A new game (what POST /v1/games answers), from synchronous test code."""
    return asyncio.run(create_game_now(runtime, clock, tenant_id, terms))


def apply_due(runtime: Runtime, clock: games.Clock, tenant_id: str, game_id: str) -> games.DueApplied:
    """The game's passed deadlines applied, as the sweep applies them (pokna.dealer.action.game_action.apply_due)."""

    async def apply() -> games.DueApplied:
        async with runtime.aio.connection() as connection:
            return await games.apply_due(connection, dealer_of(runtime), clock, tenant_id, game_id)

    return asyncio.run(apply())


def read_game(runtime: Runtime, clock: games.Clock, tenant_id: str, game_id: str) -> GameOut:
    """The game as GET /v1/games/{id} reads it (pokna.dealer.reading), a passed deadline applied first."""

    async def read() -> GameOut:
        async with runtime.aio.connection() as connection:
            caller = games.Caller(tenant_id=tenant_id)
            return await games.read_game(connection, dealer_of(runtime), clock, caller, game_id)

    return asyncio.run(read())


def read_proof(runtime: Runtime, clock: games.Clock, tenant_id: str, game_id: str) -> GameProofOut:
    """The game's proof as GET /v1/games/{id}/proof reads it (pokna.dealer.reading)."""

    async def read() -> GameProofOut:
        async with runtime.aio.connection() as connection:
            caller = games.Caller(tenant_id=tenant_id)
            return await games.game_proof(connection, dealer_of(runtime), clock, caller, game_id)

    return asyncio.run(read())


# --- whole games below HTTP, for tests that play many at once ----------------------------------------------

_ACTIONS: TypeAdapter[games.PlayerRequest] = TypeAdapter(GameAction)


async def create_game_now(
    runtime: Runtime,
    clock: games.Clock,
    tenant_id: str,
    terms: games.NewGame,
    connection: AsyncConnection[Any] | None = None,
) -> dict[str, Any]:
    """A new game through the dealer's creation (pokna.dealer.creating, what POST /v1/games calls),
    answered as the route answers it."""
    if connection is None:
        async with runtime.aio.connection() as own:
            return await create_game_now(runtime, clock, tenant_id, terms, own)
    created = await games.create_game(
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
    dealer = dealer_of(runtime)
    for _ in range(max_steps):
        if game["status"] in ("settled", "cancelled"):
            return game
        request = _ACTIONS.validate_python(policy(game))
        played = await games.act(
            connection, dealer, clock, games.Caller(tenant_id=tenant_id), None, game["id"], request
        )
        assert played.status == 200, played.body
        game = json.loads(played.body)
    raise AssertionError(f"game {game['id']} did not end within {max_steps} actions")
