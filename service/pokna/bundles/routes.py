"""The audit bundle: the tenant's books over a range with the proof of every game they move money for."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from pokna import bundles
from pokna.api.auth import TenantDep
from pokna.api.deps import RuntimeDep, SessionDep, streamed
from pokna.api.fields import SEQ_MAX, Moment
from pokna.api.problem_docs import BAD_RANGE, KEYED, VALIDATION, problems
from pokna.audit.records import MEDIA_TYPE

router = APIRouter(prefix="/v1", tags=["audit"])


@router.get(
    "/audit/bundle",
    response_class=StreamingResponse,
    summary="Stream an audit bundle: ledger, proofs, checkpoints and key ring over a seq or time range",
    description="JSON Lines of typed records (docs/audit.md): a signed header, the key ring, then the "
    "journal in seq order, each transaction preceded by the accounts and games it first touches (a game with "
    "its signed proof once it has ended) and followed by any checkpoint signed at its seq, and a trailer. "
    "Check it offline with `pokna audit verify BUNDLE --keys <published keys>`. Give the range by seq or by "
    "time (not both for one end); an open end is the start of the books or the chain head now.",
    responses={
        200: {"content": {MEDIA_TYPE: {"schema": {"type": "string"}}}, "description": "The bundle, streamed"},
        **problems(KEYED, VALIDATION, BAD_RANGE),
    },
)
def audit_bundle(
    request: Request,
    runtime: RuntimeDep,
    tenant_id: TenantDep,
    session: SessionDep,
    from_seq: Annotated[int | None, Query(ge=1, le=SEQ_MAX, description="First seq.")] = None,
    to_seq: Annotated[int | None, Query(ge=1, le=SEQ_MAX, description="Last seq.")] = None,
    from_time: Annotated[
        Moment | None, Query(description="From the first transaction written at or after this time.")
    ] = None,
    to_time: Annotated[
        Moment | None, Query(description="To the last transaction written at or before this time.")
    ] = None,
) -> StreamingResponse:
    # The request's session outlives this return: its dependency closes it after the response is sent.
    chunks = bundles.open_bundle(
        session,
        runtime.keys,
        tenant_id,
        bundles.BundleRange(from_seq=from_seq, to_seq=to_seq, from_time=from_time, to_time=to_time),
    )
    return StreamingResponse(
        streamed(request, session, chunks, commit_each_chunk=True), media_type=MEDIA_TYPE
    )
