"""The frozen outside reference (issue 18): the smallest app a competent developer would write by hand
for one authenticated transactional endpoint. **Frozen: never tune it after 2026-12-01.** Its figures
are the yardstick the product is measured against; a faster reference would move the goalposts.

No product code: FastAPI, Pydantic, a `psycopg_pool.ConnectionPool`, three tables of its own. One
route, `POST /touch` with `{"account_id": "..."}` and `Authorization: Bearer <key>`:

    BEGIN
    SELECT tenant_id FROM bench_reference_key WHERE key_hash = sha256(<key>)
    SELECT id, balance FROM bench_reference_account WHERE id = :id AND tenant_id = :tenant FOR UPDATE
    INSERT INTO bench_reference_touch (account_id, balance) VALUES (...) RETURNING id
    COMMIT
    -> 200 {"account_id", "balance", "touch_id"}; 401 for a bad key; 404 for an unknown account

Sync route handlers on FastAPI's thread pool, as the product's routes are (the same concurrency model,
so the comparison measures what each request costs, not async against threads). Served the way
`pokna serve` serves the product: uvicorn, `--workers` processes sharing one listening socket with
TCP_NODELAY, no access log.

    .venv/bin/python bench/reference_app.py --port 8124 --workers 2     # POKNA_DATABASE_URL names the database
"""

from __future__ import annotations

import argparse
import hashlib
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

import psycopg
import uvicorn
from fastapi import FastAPI, Header, HTTPException
from psycopg_pool import ConnectionPool
from pydantic import BaseModel
from uvicorn.supervisors import Multiprocess

SCHEMA = """
CREATE TABLE IF NOT EXISTS bench_reference_key (
    key_hash bytea PRIMARY KEY,
    tenant_id text NOT NULL
);
CREATE TABLE IF NOT EXISTS bench_reference_account (
    id text PRIMARY KEY,
    tenant_id text NOT NULL,
    balance bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS bench_reference_touch (
    id bigserial PRIMARY KEY,
    account_id text NOT NULL REFERENCES bench_reference_account (id),
    balance bigint NOT NULL,
    touched_at timestamptz NOT NULL DEFAULT now()
);
"""


def key_hash(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def seed(conninfo: str, tenant_id: str, key: str, account_ids: list[str]) -> None:
    """The reference's own tables, one tenant's key and its accounts (run once, before serving)."""
    with psycopg.connect(conninfo) as connection:
        connection.execute(SCHEMA)
        connection.execute(
            "INSERT INTO bench_reference_key (key_hash, tenant_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (key_hash(key), tenant_id),
        )
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO bench_reference_account (id, tenant_id, balance) VALUES (%s, %s, 0) "
                "ON CONFLICT DO NOTHING",
                [(account_id, tenant_id) for account_id in account_ids],
            )


class Touch(BaseModel):
    account_id: str


class Touched(BaseModel):
    account_id: str
    balance: int
    touch_id: int


def libpq_conninfo(url: str) -> str:
    """`postgresql+psycopg://…` (the product's form) → `postgresql://…` (libpq's)."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def create_app() -> FastAPI:
    pool = ConnectionPool(libpq_conninfo(os.environ["POKNA_DATABASE_URL"]), open=False)  # its defaults: 4

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        pool.open(wait=True)
        yield
        pool.close()

    app = FastAPI(lifespan=lifespan)

    @app.get("/readyz")
    def readyz() -> dict[str, str]:
        return {"status": "ready"}

    @app.post("/touch")
    def touch(body: Touch, authorization: Annotated[str, Header()] = "") -> Touched:
        scheme, _, key = authorization.partition(" ")
        if scheme.lower() != "bearer" or not key:
            raise HTTPException(401, "missing bearer key")
        with pool.connection() as connection, connection.transaction():
            tenant = connection.execute(
                "SELECT tenant_id FROM bench_reference_key WHERE key_hash = %s", (key_hash(key),)
            ).fetchone()
            if tenant is None:
                raise HTTPException(401, "unknown key")
            account = connection.execute(
                "SELECT id, balance FROM bench_reference_account WHERE id = %s AND tenant_id = %s FOR UPDATE",
                (body.account_id, tenant[0]),
            ).fetchone()
            if account is None:
                raise HTTPException(404, "no such account")
            touched = connection.execute(
                "INSERT INTO bench_reference_touch (account_id, balance) VALUES (%s, %s) RETURNING id",
                (account[0], account[1]),
            ).fetchone()
            assert touched is not None
        return Touched(account_id=account[0], balance=account[1], touch_id=touched[0])

    return app


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    config = uvicorn.Config(
        "reference_app:create_app",
        factory=True,
        host=options.host,
        port=options.port,
        workers=options.workers,
        log_config=None,
        access_log=False,
    )
    # As `pokna serve` does: bind once, TCP_NODELAY on the listener (accepted sockets inherit it).
    sock = config.bind_socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if options.workers == 1:
        uvicorn.Server(config).run(sockets=[sock])
        return
    Multiprocess(config, sockets=[sock]).run()


if __name__ == "__main__":
    main()
