"""Persistence: SQLAlchemy models, engines and sessions. Alembic migrations live in /migrations."""
