"""Tenant and API-key lifecycle. Secrets are shown once and stored only as SHA-256 digests."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection
from sqlalchemy.orm import Session

from pokna.db.models.tenant import ApiKey, Tenant
from pokna.db.types import new_id, utc_now
from pokna.errors import NotFound
from pokna.tenants import repository
from pokna.tenants.authentication import key_digest

KEY_PREFIX = "pk_"


@dataclass(frozen=True)
class IssuedKey:
    key_id: str
    tenant_id: str
    secret: str


def create_tenant(session: Session, name: str) -> Tenant:
    name = name.strip()
    if not name or len(name) > 200:
        raise ValueError("a tenant name is 1-200 characters")
    tenant = Tenant(id=new_id("ten"), name=name, created_at=utc_now())
    repository.add(session, tenant)
    return tenant


def get_tenant(session: Session, tenant_id: str) -> Tenant:
    tenant = repository.get_tenant(session, tenant_id)
    if tenant is None:
        raise NotFound(f"no tenant {tenant_id}")
    return tenant


def list_tenants(session: Session) -> list[Tenant]:
    return repository.list_tenants(session)


def tenant_ids(session: Session) -> list[str]:
    """Every tenant's id, in order: what background work goes through one tenant at a time (a tenant's rows
    live on one node of a distributed database, docs/scaling.md). Read from `tenant`, a reference table."""
    return repository.tenant_ids(session)


async def tenant_ids_async(connection: AsyncConnection[Any]) -> list[str]:
    """`tenant_ids` on an async connection, for the background work on the async road (the public log's
    sequencer)."""
    return [str(row[0]) for row in await (await connection.execute(_TENANT_IDS)).fetchall()]


_TENANT_IDS = "SELECT id FROM tenant ORDER BY id"


def issue_api_key(session: Session, tenant_id: str) -> IssuedKey:
    get_tenant(session, tenant_id)
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(
        id=new_id("key"), tenant_id=tenant_id, secret_sha256=key_digest(secret), created_at=utc_now()
    )
    repository.add(session, key)
    return IssuedKey(key_id=key.id, tenant_id=tenant_id, secret=secret)


def list_api_keys(session: Session, tenant_id: str) -> list[ApiKey]:
    return repository.list_api_keys(session, tenant_id)


def revoke_api_key(session: Session, key_id: str) -> ApiKey:
    key = repository.get_api_key(session, key_id)
    if key is None:
        raise NotFound(f"no API key {key_id}")
    if key.revoked_at is None:
        key.revoked_at = utc_now()
        session.flush()
    return key
