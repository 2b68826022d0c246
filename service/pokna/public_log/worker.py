"""The sequencer's passes: every tenant's log, each in a transaction of its own, once or every second, on
a connection of the process's one pool (pokna.db.aio): no session, no thread.

`sequence_once` is one pass (`pokna log sequence --once`; `pokna sweep` runs `sequence_pass` on its own
connection); `run_sequencer` is the worker's loop."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection

from pokna.db.aio import AsyncDatabase
from pokna.db.types import utc_now
from pokna.public_log.sequencer import BATCH, LogSigner, append_finished_games
from pokna.tenants.service import tenant_ids_async

INTERVAL_SECONDS = 1.0
log = logging.getLogger("pokna.public_log")


async def sequence_once(
    database: AsyncDatabase, signer: LogSigner, clock: Callable[[], datetime] = utc_now, batch: int = BATCH
) -> int:
    """One pass: how many games it appended, over every tenant. A tenant whose log another process holds
    is skipped; that process appends its games."""
    async with database.connection() as connection:
        return await sequence_pass(connection, signer, clock, batch)


async def sequence_pass(
    connection: AsyncConnection[Any], signer: LogSigner, clock: Callable[[], datetime], batch: int
) -> int:
    appended = 0
    for tenant_id in await tenant_ids_async(connection):
        appended += await append_finished_games(connection, tenant_id, signer, clock(), batch) or 0
    return appended


async def run_sequencer(
    database: AsyncDatabase,
    signer: LogSigner,
    should_stop: Callable[[], bool],
    interval: float = INTERVAL_SECONDS,
    batch: int = BATCH,
) -> int:
    """Pass after pass, a pass every `interval` seconds, until `should_stop`: the games appended. A failed
    pass is logged and the next one tries again (the pool replaces a connection the database closed: a
    restart costs a few passes, never the worker). A first pass that fails ends the worker with its error,
    as the webhooks worker does with a database it never reached: that is a configuration mistake (no
    schema, a wrong database), which retrying a second later for ever would only hide."""
    appended = 0
    passed = False
    while not should_stop():
        started = time.monotonic()
        try:
            appended += await sequence_once(database, signer, utc_now, batch)
            passed = True
        except Exception:
            if not passed:
                raise
            log.exception("public log: a sequencer pass failed")
        while not should_stop() and time.monotonic() - started < interval:
            await asyncio.sleep(min(0.05, interval))
    return appended
