"""The calling tenant's settings: its default rake for new games and tables."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from pokna.api.auth import TenantDep
from pokna.api.deps import SessionDep
from pokna.api.idempotency import IdempotencyDep
from pokna.api.problems import problem_responses
from pokna.api.schemas.common import RakeTermsIn
from pokna.tenants.settings import TenantSettingsOut, set_default_rake, tenant_settings

router = APIRouter(prefix="/v1", tags=["tenant"])


class TenantSettingsUpdate(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"rake": {"bps": 500, "cap": 100}}]}
    )

    rake: RakeTermsIn = Field(
        description="The default rake of games and tables created from now on; existing ones keep theirs."
    )


@router.get(
    "/tenant/settings",
    response_model=TenantSettingsOut,
    summary="The tenant's settings: the default rake of new games and tables",
    responses=problem_responses(401),
)
def read_settings(tenant_id: TenantDep, session: SessionDep) -> TenantSettingsOut:
    return tenant_settings(session, tenant_id)


@router.put(
    "/tenant/settings",
    response_model=TenantSettingsOut,
    summary="Set the default rake of new games and tables (a game's own terms never change)",
    responses=problem_responses(401, 409, 422),
)
def update_settings(
    body: TenantSettingsUpdate, tenant_id: TenantDep, idempotency: IdempotencyDep
) -> JSONResponse:
    def work(session: Session) -> tuple[int, TenantSettingsOut]:
        return 200, set_default_rake(session, tenant_id, bps=body.rake.bps, cap=body.rake.cap)

    return idempotency.run(work)
