"""SQLAlchemy sessions for tests that set rows up or read them back through the models. The service holds
none: every request, command and job is on psycopg's pools (pokna.db.aio)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=False)


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
