from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from pokna.api.deps import RuntimeDep
from pokna.api.problem_docs import DATABASE_UNAVAILABLE, SCHEMA_OUT_OF_DATE, problems
from pokna.api.problems import problem_response
from pokna.db.aio import AsyncDatabase
from pokna.db.backend import accepts_writes
from pokna.db.migrate import head_revision, schema_revision
from pokna.errors import DatabaseUnavailable

router = APIRouter(tags=["health"])

READINESS_SECONDS = 3.0
"""The longest `/readyz` takes: under a load balancer's usual probe timeout (5 s)."""

_ABANDONED: set[asyncio.Future[tuple[str | None, bool]]] = set()
"""Reads a probe stopped waiting for, held until they have ended (the loop keeps only weak references)."""


class Health(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"status": "ok"}]})

    status: Literal["ok"] = Field(description="Always `ok`: the process answers.")


class Readiness(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"status": "ready", "database": "postgresql", "embedded": False, "schema_revision": "0008"}
            ]
        }
    )

    status: Literal["ready"] = Field(description="Always `ready`; anything else is a 503 problem.")
    database: Literal["postgresql"] = Field(description="The database this process runs on.")
    embedded: bool = Field(
        description="True on the private PostgreSQL in the data directory (no POKNA_DATABASE_URL set)."
    )
    schema_revision: str | None = Field(description="The database's migration, which is the code's head.")


@router.get(
    "/healthz",
    response_model=Health,
    summary="The process is alive",
    description="Liveness: answers without touching the database.",
    responses=problems(),
)
def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="The database is reachable and its schema is at the head migration",
    description="Readiness: route traffic here only while this answers 200. It answers within "
    f"{READINESS_SECONDS:g} s whatever the database does (a 503 if it has not answered by then).",
    responses=problems(DATABASE_UNAVAILABLE, SCHEMA_OUT_OF_DATE),
)
async def readyz(request: Request, runtime: RuntimeDep) -> Readiness | JSONResponse:
    """A database that cannot serve (down, unreachable, read-only, not answering) is the 503 every route
    answers then, `database_unavailable` with `Retry-After`, from the one handler (`pokna.api.problems`).

    On the runtime's monitoring pool, not the requests': readiness is the database's, so a probe neither
    waits at the database gate behind a burst nor takes a place from it. The read runs aside, as a task
    of the event loop (no thread), and the probe is answered at READINESS_SECONDS whether or not it has
    finished: a load balancer's check sees "not ready" while a frozen database holds the read (cancelled
    then; psycopg's cancellation waits on the server, so it ends aside, when the watchdog,
    pokna.db.watchdog, cuts the connection)."""
    read = asyncio.ensure_future(_read_readiness(runtime.monitoring))
    done, _ = await asyncio.wait({read}, timeout=READINESS_SECONDS)
    if not done:
        read.cancel()  # it ends aside: its connection is closed, not given back mid-statement
        _ABANDONED.add(read)
        read.add_done_callback(_ABANDONED.discard)
        raise DatabaseUnavailable(f"the database did not answer within {READINESS_SECONDS:g} s")
    revision, writable = read.result()
    if not writable:
        raise DatabaseUnavailable("the database is read-only (a standby, or the primary was demoted)")
    head = head_revision()
    if revision != head:
        return problem_response(
            request,
            status=503,
            code="schema_out_of_date",
            title="Schema out of date",
            detail=f"database schema is at {revision or 'nothing'}, the code needs {head}; run `pokna db upgrade`",
        )
    return Readiness(
        status="ready",
        database="postgresql",
        embedded=runtime.settings.embedded_database,
        schema_revision=revision,
    )


async def _read_readiness(database: AsyncDatabase) -> tuple[str | None, bool]:
    async with database.connection() as connection:
        return await schema_revision(connection), await accepts_writes(connection)
