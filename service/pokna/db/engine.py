"""Engines and sessions. One engine per process; one session (unit of work) per request or command.

`unit_of_work` is the one way to hold a session outside HTTP (commands, the sweep, tests); a request's
session is the same idea as a FastAPI dependency (`pokna.api.deps.SessionDep`), which must also commit
before the response is sent."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.backend import Backend, backend_of


def make_engine(url: str, **kwargs: Any) -> Engine:
    # A SQLAlchemy error's text carries the statement's parameters: a deposit's amount, reference and
    # metadata, a key's hash, a sealed seed. Errors are logged, so they never carry the values.
    kwargs.setdefault("hide_parameters", True)
    if backend_of(url) is Backend.SQLITE:
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30}, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        # pysqlite's own BEGIN handling defers locking; issue BEGIN IMMEDIATE ourselves so that a
        # writer takes SQLite's write lock up front instead of failing half-way on upgrade.
        event.listen(engine, "begin", _sqlite_begin_immediate)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # we issue BEGIN ourselves (see _sqlite_begin_immediate)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _sqlite_begin_immediate(connection: Any) -> None:
    connection.exec_driver_sql("BEGIN IMMEDIATE")


@contextmanager
def unit_of_work(sessions: sessionmaker[Session]) -> Iterator[Session]:
    """Commit if the block finishes, roll back if it raises: nothing is ever half-written."""
    session = sessions()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
