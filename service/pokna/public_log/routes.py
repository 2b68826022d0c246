"""The public logs' read API: no API key, like the fairness links. A log is public by design: what it
shows of a game is its id, its pot account, its status and the hash of its proof, never a seed or a
balance. A checkpoint or proof at a given size never changes, so those answers are cacheable forever."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from pokna.api.deps import public_connection
from pokna.api.fields import NoNul
from pokna.api.problem_docs import VALIDATION, problems
from pokna.public_log import reads
from pokna.public_log.problem_docs import (
    CHECKPOINT_NOT_FOUND,
    GAME_NOT_LOGGED,
    LOG_EMPTY,
    SIZE_TOO_LARGE,
    SIZES_BACKWARDS,
)
from pokna.public_log.schemas import EXAMPLE_CHECKPOINT, ConsistencyOut, InclusionOut

router = APIRouter(tags=["public log"])
NOTE_MEDIA = "text/plain; charset=utf-8"
IMMUTABLE = {"Cache-Control": "public, max-age=31536000, immutable"}
LATEST = {"Cache-Control": "public, max-age=1"}
TenantId = Annotated[
    str, Path(description="The tenant whose log it is (the last part of its origin)."), NoNul
]
LARGEST_SIZE = 2**63 - 1
"""A log's size is a PostgreSQL bigint (`game_log.size`)."""
TreeSize = Annotated[
    int, Path(ge=1, le=LARGEST_SIZE, description="A tree size the log signed a checkpoint of.")
]
CHECKPOINT_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The checkpoint as a C2SP signed note (tlog-checkpoint): origin, size, root hash, "
        "one `ledger <chain> <seq> <hash>` line per ledger chain, a blank line, the service's signature.",
        "content": {"text/plain": {"schema": {"type": "string"}, "example": EXAMPLE_CHECKPOINT}},
    }
}


@router.get(
    "/v1/logs/{tenant_id}/checkpoint",
    response_class=Response,
    summary="The latest signed checkpoint of a tenant's public log of finished games",
    description="No API key. Witnesses keep it (`pokna-verify log watch`) and ask the next one's consistency "
    "with it. The key name is the origin; check it with the service's Ed25519 key (`/v1/fairness/keys`).",
    responses={**CHECKPOINT_RESPONSE, **problems(LOG_EMPTY, VALIDATION)},
)
async def latest_checkpoint(tenant_id: TenantId, request: Request) -> Response:
    async with public_connection(request) as connection:
        note = await reads.latest_checkpoint(connection, tenant_id)
    return Response(note, media_type=NOTE_MEDIA, headers=LATEST)


@router.get(
    "/v1/logs/{tenant_id}/checkpoints/{tree_size}",
    response_class=Response,
    summary="The checkpoint a tenant's public log signed at one size",
    description="No API key. Every checkpoint stays servable: one a player or witness kept can be fetched again.",
    responses={**CHECKPOINT_RESPONSE, **problems(CHECKPOINT_NOT_FOUND, VALIDATION)},
)
async def checkpoint(tenant_id: TenantId, tree_size: TreeSize, request: Request) -> Response:
    async with public_connection(request) as connection:
        note = await reads.checkpoint_of_size(connection, tenant_id, tree_size)
    return Response(note, media_type=NOTE_MEDIA, headers=IMMUTABLE)


@router.get(
    "/v1/logs/{tenant_id}/games/{game_id}/inclusion",
    response_model=InclusionOut,
    summary="Proof that a finished game is in its tenant's public log",
    description="No API key. The RFC 9162 audit path from the game's leaf to the root of the tree of "
    "`tree_size` games (default: the log's size now). Check it against a checkpoint of that size.",
    responses=problems(GAME_NOT_LOGGED, SIZE_TOO_LARGE, VALIDATION),
)
async def inclusion(
    tenant_id: TenantId,
    game_id: Annotated[str, Path(description="The game's id."), NoNul],
    request: Request,
    response: Response,
    tree_size: Annotated[
        int | None, Query(ge=1, le=LARGEST_SIZE, description="The tree size to prove inclusion in.")
    ] = None,
) -> InclusionOut:
    async with public_connection(request) as connection:
        proof = await reads.inclusion(connection, tenant_id, game_id, tree_size)
    if tree_size is not None:
        response.headers.update(IMMUTABLE)
    return InclusionOut.of(proof)


@router.get(
    "/v1/logs/{tenant_id}/consistency",
    response_model=ConsistencyOut,
    summary="Proof that a tenant's public log at one size is the start of it at a later size",
    description="No API key. The RFC 9162 consistency proof between the trees of `first` and `second` games: "
    "what a witness checks before it trusts a newer checkpoint. None exists from a later to an earlier size.",
    responses=problems(SIZE_TOO_LARGE, SIZES_BACKWARDS, VALIDATION),
)
async def consistency(
    tenant_id: TenantId,
    request: Request,
    response: Response,
    first: Annotated[int, Query(ge=1, le=LARGEST_SIZE, description="The earlier tree size.")],
    second: Annotated[int, Query(ge=1, le=LARGEST_SIZE, description="The later tree size.")],
) -> ConsistencyOut:
    async with public_connection(request) as connection:
        proof = await reads.consistency(connection, tenant_id, first, second)
    response.headers.update(IMMUTABLE)
    return ConsistencyOut.of(proof)
