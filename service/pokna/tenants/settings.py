"""A tenant's settings: today its default rake, the terms a new game or table takes when its request
names none. A game keeps the terms it was created with (they are signed in its commitment receipt), so
changing the defaults changes only games and tables created afterwards."""

from __future__ import annotations

from typing import Any, Literal

from psycopg import AsyncConnection
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from pokna.errors import InvalidRequest
from pokna.tenants.authentication import read_beside
from pokna.tenants.service import get_tenant

BPS_PER_WHOLE = 10_000

GAME_DEFAULTS = "SELECT rake_bps, rake_cap, fairness_mode FROM tenant WHERE id = %(tenant_id)s"
"""`rake_defaults` and the default fairness mode as one driver statement, for the async paths
(pokna.dealer.creating, `read_settings`)."""


class DefaultRakeOut(BaseModel):
    bps: int = Field(description="Basis points of each pot paid out (500 is 5%), rounded down.")
    cap: int | None = Field(description="At most this many minor units per pot; null for no cap.")


class TenantSettingsOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "object": "tenant_settings",
                    "tenant_id": "ten_5e0c…",
                    "rake": {"bps": 500, "cap": 100},
                    "fairness_mode": "stake",
                }
            ]
        }
    )

    object: Literal["tenant_settings"]
    tenant_id: str
    rake: DefaultRakeOut = Field(description="The rake of new games and tables whose request names none.")
    fairness_mode: Literal["stake", "beacon"] = Field(
        description="The fairness mode of new games (and table rounds) whose request names none: `stake` "
        "unless set (docs/fairness.md, section 1b)."
    )


def rake_defaults(session: Session, tenant_id: str) -> tuple[int, int | None]:
    """The rake terms (basis points, cap) a new game or table takes when its request names none."""
    tenant = get_tenant(session, tenant_id)
    return tenant.rake_bps, tenant.rake_cap


def tenant_settings(session: Session, tenant_id: str) -> TenantSettingsOut:
    tenant = get_tenant(session, tenant_id)
    return settings_out(tenant_id, tenant.rake_bps, tenant.rake_cap, tenant.fairness_mode)


async def read_settings(connection: AsyncConnection[Any], api_key_digest: str) -> TenantSettingsOut:
    """The key's tenant's settings, read beside the key's check: one round trip."""
    tenant_id, found = await read_beside(
        connection,
        api_key_digest,
        lambda tenant_id: connection.execute(GAME_DEFAULTS, {"tenant_id": tenant_id}),
    )
    row = await found.fetchone()
    assert row is not None, "a key's tenant is never deleted"
    bps, cap, mode = row
    return settings_out(tenant_id, bps, cap, mode)


def settings_out(tenant_id: str, bps: int, cap: int | None, fairness_mode: str) -> TenantSettingsOut:
    return TenantSettingsOut(
        object="tenant_settings",
        tenant_id=tenant_id,
        rake=DefaultRakeOut(bps=bps, cap=cap),
        fairness_mode=fairness_mode,
    )


def set_default_fairness_mode(session: Session, tenant_id: str, mode: str) -> None:
    get_tenant(session, tenant_id).fairness_mode = mode
    session.flush()


def set_default_rake(session: Session, tenant_id: str, *, bps: int, cap: int | None) -> TenantSettingsOut:
    if not 0 <= bps <= BPS_PER_WHOLE:
        raise InvalidRequest(
            f"the rake is 0 to {BPS_PER_WHOLE} basis points, not {bps}", field="body.rake.bps"
        )
    if cap is not None and cap < 0:
        raise InvalidRequest(f"the rake cap must not be negative, not {cap}", field="body.rake.cap")
    tenant = get_tenant(session, tenant_id)
    tenant.rake_bps = bps
    tenant.rake_cap = cap
    session.flush()
    return tenant_settings(session, tenant_id)
