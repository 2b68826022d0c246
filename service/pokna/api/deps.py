"""Request-scoped dependencies. The session is committed by the dependency that opened it, never by a service."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from pokna.runtime import Runtime


async def get_runtime(request: Request) -> Runtime:
    """Async because it does no I/O: FastAPI runs a plain `def` dependency in the thread pool."""
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def get_session(runtime: RuntimeDep) -> Iterator[Session]:
    session = runtime.sessions()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


SessionDep = Annotated[Session, Depends(get_session)]
