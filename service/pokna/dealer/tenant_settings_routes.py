"""The calling tenant's settings: its default rake for new games and tables. Read on the driver, beside
the key's check (one round trip); set on the driver too, under the keyed transaction
(pokna.api.keyed_writes)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from pokna.api.auth import ApiKeyDigestDep
from pokna.api.deps import driver_connection
from pokna.api.fields import RakeTermsIn
from pokna.api.keyed_writes import KeyedWriteDep
from pokna.api.problem_docs import IDEMPOTENT, JSON_BODY, KEYED, problems
from pokna.api.written_numbers import WrittenNumbersRoute
from pokna.dealer.rake import RakeTerms, set_defaults
from pokna.tenants import settings
from pokna.tenants.settings import TenantSettingsOut

router = APIRouter(prefix="/v1", tags=["tenant"], route_class=WrittenNumbersRoute)


class TenantSettingsUpdate(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"rake": {"bps": 500, "cap": 100}}]}
    )

    rake: RakeTermsIn = Field(
        description="The default rake of games and tables created from now on; existing ones keep theirs."
    )
    fairness_mode: Literal["stake", "beacon"] | None = Field(
        default=None,
        description="The default fairness mode of games created from now on without their own "
        "`fairness_mode`; absent or null: unchanged.",
    )


@router.get(
    "/tenant/settings",
    response_model=TenantSettingsOut,
    summary="The tenant's settings: the default rake of new games and tables",
    description="What a game or table created without its own `rake` takes: no rake until you set one.",
    responses=problems(KEYED),
)
async def read_settings(request: Request, api_key_digest: ApiKeyDigestDep) -> TenantSettingsOut:
    async with driver_connection(request) as connection:
        return await settings.read_settings(connection, api_key_digest)


@router.put(
    "/tenant/settings",
    response_model=TenantSettingsOut,
    summary="Set the default rake of new games and tables (a game's own terms never change)",
    description="Games and tables created from now on without their own `rake` take these terms; the terms "
    "of existing games are signed in their commitment and never change.",
    responses=problems(KEYED, JSON_BODY, IDEMPOTENT),  # the rake terms are bounded by their schema
)
async def update_settings(body: TenantSettingsUpdate, write: KeyedWriteDep) -> TenantSettingsOut:
    terms = RakeTerms(body.rake.bps, body.rake.cap)
    return await write(
        TenantSettingsOut, lambda opened: set_defaults(opened, terms, body.fairness_mode), status=200
    )
