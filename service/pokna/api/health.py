from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from pokna.api.deps import RuntimeDep, SessionDep
from pokna.api.problems import problem_response, problem_responses
from pokna.db.backend import accepts_writes
from pokna.db.migrate import head_revision, schema_revision
from pokna.errors import DatabaseUnavailable

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    database: str
    schema_revision: str | None


@router.get("/healthz", response_model=Health, summary="The process is alive")
def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="The database is reachable and its schema is at the head migration",
    responses=problem_responses(503),
)
def readyz(request: Request, runtime: RuntimeDep, session: SessionDep) -> Readiness | JSONResponse:
    """A database that cannot serve (down, unreachable, out of connections) is the 503 every route
    answers then, `database_unavailable` with `Retry-After`, from the one handler (`pokna.api.problems`)."""
    revision = schema_revision(session)
    if not accepts_writes(session):
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
    return Readiness(status="ready", database=runtime.backend, schema_revision=revision)
