"""The sequencer's passes: every tenant's log, each in a transaction of its own, once or every second."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import unit_of_work
from pokna.db.types import utc_now
from pokna.public_log.sequencer import BATCH, LogSigner, append_finished_games
from pokna.tenants import service as tenants

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
    with unit_of_work(sessions) as session:
        tenant_ids = tenants.tenant_ids(session)
    appended = 0
    for tenant_id in tenant_ids:
        with unit_of_work(sessions) as session:
            appended += append_finished_games(session, tenant_id, signer, clock(), batch) or 0
    return appended


def run_sequencer(
    sessions: sessionmaker[Session],
    signer: LogSigner,
    should_stop: Callable[[], bool],
    interval: float = INTERVAL_SECONDS,
    batch: int = BATCH,
) -> int:
    """Pass after pass, a pass every `interval` seconds, until `should_stop`: the games appended. A failed
    pass is logged and the next one tries again (a database restart costs a few passes, never the worker)."""
    appended = 0
    while not should_stop():
        started = time.monotonic()
        try:
            appended += sequence_all(sessions, signer, batch=batch)
        except Exception:
            log.exception("public log: a sequencer pass failed")
        while not should_stop() and time.monotonic() - started < interval:
            time.sleep(min(0.05, interval))
    return appended
