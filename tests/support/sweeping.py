"""`pokna sweep`'s work in a test: one run on the runtime's async database, as the command runs it."""

from __future__ import annotations

import asyncio
from typing import Any

from pokna.dealer.service import Clock
from pokna.runtime import Runtime
from pokna.sweep import SweepReport, sweep


def swept(runtime: Runtime, clock: Clock, **options: Any) -> SweepReport:
    return asyncio.run(sweep(runtime.aio, runtime.keys, clock, **options))
