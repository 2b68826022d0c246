"""What one process holds for its lifetime: settings, the engine and the session factory. No game state."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import make_engine, make_sessionmaker
from pokna.settings import Settings


@dataclass(frozen=True)
class Runtime:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]

    @classmethod
    def from_settings(cls, settings: Settings, engine: Engine | None = None) -> Runtime:
        engine = engine or make_engine(settings.resolved_database_url)
        return cls(settings=settings, engine=engine, sessions=make_sessionmaker(engine))
