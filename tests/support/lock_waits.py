"""Races made to happen in one order: a test holds one side's write uncommitted until PostgreSQL shows the
other side's statement waiting on it, then commits."""

from __future__ import annotations

import time

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker


def wait_for_a_statement_waiting_on_a_lock(
    sessions: sessionmaker[Session], *starting: str, seconds: float = 30.0
) -> None:
    """Until a statement whose text starts with one of `starting` waits on a lock (bounded in time, then
    fails)."""
    deadline = time.monotonic() + seconds
    with sessions() as watching:
        while time.monotonic() < deadline:
            waiting = watching.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND EXISTS (SELECT FROM unnest(CAST(:starting AS text[])) AS prefix "
                    "WHERE starts_with(query, prefix))"
                ),
                {"starting": list(starting)},
            ).scalar_one()
            watching.rollback()  # a fresh snapshot of the activity each time
            if waiting:
                return
            time.sleep(0.02)
    raise AssertionError(f"no statement starting one of {starting!r} waited on a lock in {seconds} s")
