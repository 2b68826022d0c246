"""The request's notion of now. A dependency, so tests can move time to exercise deadlines."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import Depends

from pokna.api.deps import RuntimeDep
from pokna.db.types import utc_now
from pokna.dealer.service import Clock


async def get_clock(runtime: RuntimeDep) -> Clock:  # no I/O: no trip through the thread pool
    return Clock(now=utc_now(), open_game_ttl=timedelta(seconds=runtime.settings.open_game_ttl_seconds))


ClockDep = Annotated[Clock, Depends(get_clock)]
