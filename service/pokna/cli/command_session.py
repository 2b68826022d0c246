"""One unit of work against the configured database, for commands that read or write it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session

from pokna.db.engine import make_engine, unit_of_work
from pokna.settings import get_settings
from pokna.storage import make_sessionmaker


@contextmanager
def command_session() -> Iterator[Session]:
    engine = make_engine(get_settings().resolved_database_url)
    try:
        with unit_of_work(make_sessionmaker(engine)) as session:
            yield session
    finally:
        engine.dispose()
