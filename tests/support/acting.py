"""A game action through the dealer's one way in (pokna.dealer.playing.play, the async path the API
serves), for tests that act below HTTP: on the runtime's async connections, for a tenant already known."""

from __future__ import annotations

import asyncio

from pokna.dealer import service as games
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
