"""The sequencer's passes: every tenant's log, each in a transaction of its own, once or every second, on
one async connection of the pass's (or the loop's) own: no session, no thread.

`sequence_all` is the one pass the synchronous callers run (`pokna sweep`, `pokna log sequence --once`, the
tests), on a connection to the database their sessions reach, as the sweep applies deadlines
(pokna.sweep); `run_sequencer` is the worker's loop."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.aio import conninfo_of
from pokna.db.engine import Waits
from pokna.db.types import utc_now
from pokna.public_log.sequencer import BATCH, LogSigner, append_finished_games
from pokna.tenants.service import tenant_ids_async

INTERVAL_SECONDS = 1.0
log = logging.getLogger("pokna.public_log")


def sequence_all(
    sessions: sessionmaker[Session],
    signer: LogSigner,
    clock: Callable[[], datetime] = utc_now,
    batch: int = BATCH,
) -> int:
    """One pass: how many games it appended, over every tenant. A tenant whose log another process holds
    is skipped; that process appends its games."""

    async def one_pass() -> int:
        connection = await AsyncConnection.connect(conninfo(sessions), autocommit=True)
        try:
            return await sequence_pass(connection, signer, clock, batch)
        finally:
            await connection.close()

    return asyncio.run(one_pass())


def conninfo(sessions: sessionmaker[Session]) -> str:
    """The database `sessions` reach, as a libpq connection string with the service's waits."""
    engine = sessions.kw["bind"]
    assert isinstance(engine, Engine)
    return conninfo_of(engine, Waits())


async def sequence_pass(
    connection: AsyncConnection[Any], signer: LogSigner, clock: Callable[[], datetime], batch: int
) -> int:
    appended = 0
    for tenant_id in await tenant_ids_async(connection):
        appended += await append_finished_games(connection, tenant_id, signer, clock(), batch) or 0
    return appended


async def run_sequencer(
    conninfo: str,
    signer: LogSigner,
    should_stop: Callable[[], bool],
    interval: float = INTERVAL_SECONDS,
    batch: int = BATCH,
) -> int:
    """Pass after pass, a pass every `interval` seconds, until `should_stop`: the games appended. A failed
    pass is logged and the next one tries again on a new connection (a database restart costs a few
    passes, never the worker)."""
    appended = 0
    connection: AsyncConnection[Any] | None = None
    try:
        while not should_stop():
            started = time.monotonic()
            try:
                if connection is None or connection.closed or connection.broken:
                    connection = await AsyncConnection.connect(conninfo, autocommit=True)
                appended += await sequence_pass(connection, signer, utc_now, batch)
            except Exception:
                log.exception("public log: a sequencer pass failed")
            while not should_stop() and time.monotonic() - started < interval:
                await asyncio.sleep(min(0.05, interval))
    finally:
        if connection is not None:
            await connection.close()
    return appended
