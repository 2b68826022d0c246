"""The request's notion of now. A dependency, so tests can move time to exercise deadlines."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import Depends, Request

from pokna.api.deps import runtime_of
from pokna.db.types import utc_now
from pokna.dealer.action.locked import Clock


async def get_clock(request: Request) -> Clock:
    """Async: no I/O, so no trip through the thread pool. The runtime is read from the app rather than
    through `RuntimeDep`: one dependency fewer for FastAPI to solve on every game request."""
    runtime = runtime_of(request)
    return Clock(now=utc_now(), open_game_ttl=timedelta(seconds=runtime.settings.open_game_ttl_seconds))


ClockDep = Annotated[Clock, Depends(get_clock)]
