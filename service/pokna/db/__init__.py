"""Persistence: psycopg's pools (aio.py), the SQLAlchemy models Alembic compares, the migrations driven from
code (migrate.py; the migrations live in /migrations), the embedded PostgreSQL."""
