"""A tenant's settings: today its default rake, the terms a new game or table takes when its request
names none. A game keeps the terms it was created with (they are signed in its commitment receipt), so
changing the defaults changes only games and tables created afterwards."""

from __future__ import annotations

from typing import Any, Literal

from psycopg import AsyncConnection
from pydantic import BaseModel, ConfigDict, Field

from pokna.tenants.authentication import read_beside
from pokna_verify.invariant import present

GAME_DEFAULTS = "SELECT rake_bps, rake_cap, fairness_mode FROM tenant WHERE id = %(tenant_id)s"
"""The default rake terms and fairness mode of new games and tables, for the async paths
(pokna.dealer.creating, `read_settings`)."""

SET_DEFAULTS = (
    "UPDATE tenant SET rake_bps = %(bps)s, rake_cap = %(cap)s, fairness_mode = %(fairness_mode)s "
    "WHERE id = %(tenant_id)s"
)
"""The tenant's new defaults for games and tables created from now on (pokna.dealer.rake.set_defaults)."""


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


async def read_settings(connection: AsyncConnection[Any], api_key_digest: str) -> TenantSettingsOut:
    """The key's tenant's settings, read beside the key's check: one round trip."""
    tenant_id, found = await read_beside(
        connection,
        api_key_digest,
        lambda tenant_id: connection.execute(GAME_DEFAULTS, {"tenant_id": tenant_id}),
    )
    bps, cap, mode = present(await found.fetchone(), "the tenant's row (a key's tenant is never deleted)")
    return settings_out(tenant_id, bps, cap, mode)


def settings_out(tenant_id: str, bps: int, cap: int | None, fairness_mode: str) -> TenantSettingsOut:
    return TenantSettingsOut(
        object="tenant_settings",
        tenant_id=tenant_id,
        rake=DefaultRakeOut(bps=bps, cap=cap),
        fairness_mode=fairness_mode,
    )
