"""A pooled PostgreSQL connection the server closed is replaced at checkout, without a round trip
(`pokna.db.engine`: no `pool_pre_ping`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, event, text
from sqlalchemy.exc import DBAPIError

from pokna.db.engine import make_engine
from pokna.runtime import waits_of
from pokna.settings import Environment, Settings


@pytest.fixture
def pooled(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    try:
        yield engine
    finally:
        engine.dispose()


def _backend_pid(engine: Engine) -> int:
    with engine.connect() as connection:
        pid: int = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
        return pid


def _terminate(database_url: str, pid: int) -> None:
    """The server ends that backend (FATAL 57P01, then it closes the socket), as a restart does."""
    admin = make_engine(database_url)
    try:
        with admin.connect() as connection:
            assert connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
            deadline = time.monotonic() + 10
            while connection.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}
            ).scalar_one():
                assert time.monotonic() < deadline, "the backend did not end"
                time.sleep(0.05)
                connection.rollback()
    finally:
        admin.dispose()


def test_the_engine_does_not_ping_on_checkout(pooled: Engine) -> None:
    assert not pooled.pool._pre_ping
    sent: list[str] = []
    event.listen(pooled, "before_cursor_execute", lambda *args: sent.append(args[2]))
    _backend_pid(pooled)  # connects, then returns it to the pool
    sent.clear()
    _backend_pid(pooled)
    assert sent == ["SELECT pg_backend_pid()"]


def test_a_connection_the_server_closed_is_replaced_at_checkout(pooled: Engine, database_url: str) -> None:
    first = _backend_pid(pooled)
    assert _backend_pid(pooled) == first  # pooled: the same connection comes back
    _terminate(database_url, first)
    second = _backend_pid(pooled)  # without the checkout's check this statement fails on a dead socket
    assert second != first
    assert _backend_pid(pooled) == second


def test_a_session_left_idle_in_a_transaction_is_ended_by_the_server(
    database_url: str, tmp_path: Path
) -> None:
    """The API's waits bound what a stuck request can hold: its transaction is ended, its locks freed."""
    settings = Settings(
        env=Environment.TEST,
        data_dir=tmp_path,
        database_url=database_url,
        database_idle_in_transaction_timeout_seconds=1,
    )
    engine = make_engine(database_url, waits_of(settings))
    try:
        with engine.connect() as connection:
            assert connection.execute(text("SHOW idle_in_transaction_session_timeout")).scalar_one() == "1s"
            connection.execute(text("SELECT 1"))
            time.sleep(2)
            with pytest.raises(DBAPIError):
                connection.execute(text("SELECT 1"))
    finally:
        engine.dispose()
