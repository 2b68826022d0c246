"""Bearer API keys. Every route that touches a tenant's data depends on `ApiKeyDigestDep` (the key's
digest, no I/O) and checks the key on its connection, in its first round trip, through
pokna.tenants.authentication: beside its reads or its claim, or as the first statement of a stream
(`StreamingTenantDep`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from psycopg import AsyncConnection

from pokna.api.deps import driver_connection
from pokna.errors import Unauthorized
from pokna.tenants.authentication import authenticate, key_digest

_bearer = HTTPBearer(
    auto_error=False, description="`Authorization: Bearer <API key>` from `pokna tenants create`."
)


async def get_api_key_digest(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """The bearer key's SHA-256, for an async path that authenticates in its own first statement (no
    session, no thread): the same header, the same refusal when it is missing."""
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise Unauthorized("send `Authorization: Bearer <API key>`")
    return key_digest(credentials.credentials)


ApiKeyDigestDep = Annotated[str, Depends(get_api_key_digest)]


@dataclass(frozen=True)
class TenantConnection:
    tenant_id: str
    connection: AsyncConnection[Any]


@asynccontextmanager
async def tenant_connection(request: Request, digest: str) -> AsyncIterator[TenantConnection]:
    """`driver_connection` (a place at the database gate, one async connection) whose first statement
    checks the key: for an async route that reads as the tenant of the key."""
    async with driver_connection(request) as connection:
        tenant_id = await authenticate(connection, digest)
        request.state.api_key_authenticated = True
        yield TenantConnection(tenant_id, connection)


async def _streaming_tenant(request: Request, digest: ApiKeyDigestDep) -> AsyncIterator[TenantConnection]:
    """For a streamed answer that reads in one transaction throughout (the ledger export): a
    `tenant_connection` held until the response has been sent (a dependency of the request's scope ends
    only then), so the stream reads on it after the route has returned, and a key refused is a 401
    before the first byte."""
    async with tenant_connection(request, digest) as held:
        yield held


StreamingTenantDep = Annotated[TenantConnection, Depends(_streaming_tenant)]
