"""The tenants read through a session, for the background jobs that still hold one (pokna.sweep,
pokna.webhooks)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from pokna.db.models.tenant import Tenant


def tenant_ids(session: Session) -> list[str]:
    return list(session.scalars(select(Tenant.id).order_by(Tenant.id)))
