"""The calling tenant's settings: its default rake for new games and tables."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from pokna.api.auth import TenantDep
from pokna.api.deps import SessionDep
from pokna.api.fields import RakeTermsIn
from pokna.api.idempotency import IdempotencyDep
from pokna.api.problem_docs import IDEMPOTENT, JSON_BODY, KEYED, problems
from pokna.api.written_numbers import WrittenNumbersRoute
from pokna.tenants.settings import (
    TenantSettingsOut,
    set_default_fairness_mode,
    set_default_rake,
    tenant_settings,
)

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
def read_settings(tenant_id: TenantDep, session: SessionDep) -> TenantSettingsOut:
    return tenant_settings(session, tenant_id)


@router.put(
    "/tenant/settings",
    response_model=TenantSettingsOut,
    summary="Set the default rake of new games and tables (a game's own terms never change)",
    description="Games and tables created from now on without their own `rake` take these terms; the terms "
    "of existing games are signed in their commitment and never change.",
    responses=problems(KEYED, JSON_BODY, IDEMPOTENT),  # the rake terms are bounded by their schema
)
def update_settings(
    body: TenantSettingsUpdate, tenant_id: TenantDep, idempotency: IdempotencyDep
) -> TenantSettingsOut:
    def work(session: Session) -> tuple[int, TenantSettingsOut]:
        if body.fairness_mode is not None:
            set_default_fairness_mode(session, tenant_id, body.fairness_mode)
        return 200, set_default_rake(session, tenant_id, bps=body.rake.bps, cap=body.rake.cap)

    return idempotency.run(work, TenantSettingsOut)
