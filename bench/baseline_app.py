"""The product's ASGI app plus one bench-only route: the floor a game action is measured against.

`create_app()` builds exactly what `pokna serve` runs (`pokna.app.create_app`: the same middleware,
problem handlers, bearer auth and keyed transaction) and adds `POST /bench/baseline`,
which does one small write transaction through that same stack:

    BEGIN
    SELECT id, balance FROM account WHERE id = :account_id AND tenant_id = :tenant FOR UPDATE
    INSERT INTO bench_baseline_touch (account_id, balance, touched_at) VALUES (...)
    COMMIT

Like a game action, the request is a bearer-authenticated POST with a small JSON body validated by
Pydantic, goes through the admin side's keyed write (`pokna.api.keyed_writes`, on the driver; no key
sent: the API key checked beside the lock), locks one of the tenant's rows and writes one row. `bench_baseline_touch` is a bench-only table made by `create_touch_table` before
the server starts; the product's schema and routes are untouched.

Served like `pokna serve` (uvicorn with the factory, `log_config=None`, no access log, its HTTP protocol class):

    .venv/bin/python bench/baseline_app.py --port 8123 --workers 2
"""

from __future__ import annotations

import argparse
import socket
from typing import Annotated, Any

import psycopg
import uvicorn
from fastapi import APIRouter, Body, FastAPI
from pydantic import BaseModel, ConfigDict
from sqlalchemy import BigInteger, Column, DateTime, Engine, MetaData, String, Table
from uvicorn.supervisors import Multiprocess

from pokna.api.keyed_writes import KeyedWriteDep
from pokna.app import create_app as create_product_app
from pokna.cli.serve import HTTP_PROTOCOL
from pokna.db.types import utc_now
from pokna.errors import NotFound
from pokna.idempotency.keyed import Transaction
from pokna.logs import configure_logging
from pokna.settings import get_settings

BASELINE_PATH = "/bench/baseline"

bench_metadata = MetaData()
touch = Table(
    "bench_baseline_touch",
    bench_metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("account_id", String(40), nullable=False),
    Column("balance", BigInteger, nullable=False),
    Column("touched_at", DateTime(timezone=True), nullable=False),
)


def create_touch_table(engine: Engine) -> None:
    bench_metadata.create_all(engine)


class Touch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    account_id: str


class Touched(BaseModel):
    account_id: str
    balance: int


router = APIRouter()


_LOCK_WALLET = (
    "SELECT id, balance FROM account WHERE id = %(account_id)s AND tenant_id = %(tenant_id)s FOR UPDATE"
)
_TOUCH = (
    "INSERT INTO bench_baseline_touch (account_id, balance, touched_at) "
    "VALUES (%(account_id)s, %(balance)s, %(touched_at)s)"
)


@router.post(BASELINE_PATH, include_in_schema=False, response_model=Touched)
async def baseline(body: Annotated[Touch, Body()], write: KeyedWriteDep) -> Touched:
    """The kernel's keyed write with the least work: lock a wallet, insert a row, answer it."""

    async def work(opened: Transaction) -> Touched:
        async def lock(tenant_id: str) -> psycopg.AsyncCursor[Any]:
            params = {"account_id": body.account_id, "tenant_id": tenant_id}
            return await opened.connection.execute(_LOCK_WALLET, params)

        row = await (await opened.read(lock)).fetchone()
        if row is None:
            raise NotFound(f"no account {body.account_id}")
        touched = {"account_id": row[0], "balance": row[1], "touched_at": utc_now()}
        await opened.connection.execute(_TOUCH, touched)
        return Touched(account_id=row[0], balance=row[1])

    return await write(Touched, work, status=200)


def create_app() -> FastAPI:
    """The same start-up as `pokna.app.asgi:create_app`, plus the baseline route."""
    settings = get_settings()
    configure_logging(settings.log_level)
    app = create_product_app(settings)
    app.include_router(router)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--factory",
        default="baseline_app:create_app",
        help="for experiments: another `module:callable` (on PYTHONPATH) that wraps this one",
    )
    parser.add_argument(
        "--keep-nagle",
        action="store_true",
        help="serve exactly as `pokna serve` does today: with --workers > 1, accepted sockets lack TCP_NODELAY",
    )
    options = parser.parse_args()
    config = uvicorn.Config(
        options.factory,
        factory=True,
        host=options.host,
        port=options.port,
        workers=options.workers,
        log_config=None,
        access_log=False,
        http=HTTP_PROTOCOL,  # the parser `pokna serve` runs (the event loop is uvicorn's "auto" there too)
    )
    if options.workers == 1:
        uvicorn.Server(config).run()
        return
    # What uvicorn.run() does for workers > 1, except for one line: uvicorn binds the listening socket
    # with proto 0, so asyncio never sets TCP_NODELAY on the accepted sockets and every keep-alive
    # response waits ~40 ms for the client's delayed ACK (Kludex/uvicorn#3149). On Linux accepted
    # sockets inherit TCP_NODELAY from the listener.
    sock = config.bind_socket()
    if not options.keep_nagle:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    Multiprocess(config, sockets=[sock]).run()


if __name__ == "__main__":
    main()
