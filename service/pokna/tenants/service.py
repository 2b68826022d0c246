"""Tenant and API-key lifecycle. Secrets are shown once and stored only as SHA-256 digests."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from pokna.db.models.tenant import ApiKey, Tenant
from pokna.db.types import new_id, utc_now
from pokna.errors import NotFound, Unauthorized

KEY_PREFIX = "pk_"


@dataclass(frozen=True)
class IssuedKey:
    key_id: str
    tenant_id: str
    secret: str


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_tenant(session: Session, name: str) -> Tenant:
    name = name.strip()
    if not name or len(name) > 200:
        raise ValueError("a tenant name is 1-200 characters")
    tenant = Tenant(id=new_id("ten"), name=name, created_at=utc_now())
    session.add(tenant)
    session.flush()
    return tenant


def get_tenant(session: Session, tenant_id: str) -> Tenant:
    tenant = session.get(Tenant, tenant_id)
    if tenant is None:
        raise NotFound(f"no tenant {tenant_id}")
    return tenant


def list_tenants(session: Session) -> list[Tenant]:
    return list(session.scalars(select(Tenant).order_by(Tenant.created_at, Tenant.id)))


def issue_api_key(session: Session, tenant_id: str) -> IssuedKey:
    get_tenant(session, tenant_id)
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(id=new_id("key"), tenant_id=tenant_id, secret_sha256=_digest(secret), created_at=utc_now())
    session.add(key)
    session.flush()
    return IssuedKey(key_id=key.id, tenant_id=tenant_id, secret=secret)


def list_api_keys(session: Session, tenant_id: str) -> list[ApiKey]:
    query = select(ApiKey).where(ApiKey.tenant_id == tenant_id).order_by(ApiKey.created_at, ApiKey.id)
    return list(session.scalars(query))


def revoke_api_key(session: Session, key_id: str) -> ApiKey:
    key = session.get(ApiKey, key_id)
    if key is None:
        raise NotFound(f"no API key {key_id}")
    if key.revoked_at is None:
        key.revoked_at = utc_now()
        session.flush()
    return key


def authenticate(session: Session, secret: str) -> str:
    """The tenant id a live key belongs to. Unknown and revoked keys look the same to the caller."""
    key = session.scalar(select(ApiKey).where(ApiKey.secret_sha256 == _digest(secret)))
    if key is None or key.revoked_at is not None:
        raise Unauthorized("unknown or revoked API key")
    return key.tenant_id
