"""Every query on tenants and their API keys."""

from __future__ import annotations

from sqlalchemy import bindparam, select
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


_API_KEY = ApiKey.__table__
_LIVE_KEY_TENANT = select(_API_KEY.c.tenant_id).where(
    _API_KEY.c.secret_sha256 == bindparam("secret_sha256"), _API_KEY.c.revoked_at.is_(None)
)


def live_key_tenant(session: Session, secret_sha256: str) -> str | None:
    """The tenant of the live key with this digest: every authenticated request runs it, so it is one
    plain Core statement (no ORM object is built), compiled once per process."""
    tenant_id = session.connection().execute(_LIVE_KEY_TENANT, {"secret_sha256": secret_sha256}).scalar()
    return None if tenant_id is None else str(tenant_id)


def list_api_keys(session: Session, tenant_id: str) -> list[ApiKey]:
    query = select(ApiKey).where(ApiKey.tenant_id == tenant_id).order_by(ApiKey.created_at, ApiKey.id)
    return list(session.scalars(query))
