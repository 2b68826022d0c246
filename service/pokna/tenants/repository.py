"""Every query on tenants and their API keys."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from pokna.db.models.tenant import ApiKey, Tenant


def get_tenant(session: Session, tenant_id: str) -> Tenant | None:
    return session.get(Tenant, tenant_id)


def list_tenants(session: Session) -> list[Tenant]:
    return list(session.scalars(select(Tenant).order_by(Tenant.created_at, Tenant.id)))


def tenant_ids(session: Session) -> list[str]:
    return list(session.scalars(select(Tenant.id).order_by(Tenant.id)))


def add(session: Session, row: Tenant | ApiKey) -> None:
    session.add(row)
    session.flush()


def get_api_key(session: Session, key_id: str) -> ApiKey | None:
    return session.get(ApiKey, key_id)


def list_api_keys(session: Session, tenant_id: str) -> list[ApiKey]:
    query = select(ApiKey).where(ApiKey.tenant_id == tenant_id).order_by(ApiKey.created_at, ApiKey.id)
    return list(session.scalars(query))
