"""The game's public fairness link, served here rather than beside the dealer's other link routes
(pokna.dealer.link_routes) because its answer carries the game's place in the public log, which the dealer
cannot import: the dealer builds the link, this passes it `place_in_log`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request

from pokna.api.deps import public_connection
from pokna.api.problem_docs import STORED, problems
from pokna.dealer import service as dealer
from pokna.dealer.problem_docs import LINK_NOT_FOUND
from pokna.dealer.schemas import FairnessLinkOut
from pokna.public_log.game_links import place_in_log

router = APIRouter(tags=["fairness"])


@router.get(
    "/v1/fairness/proofs/{token}",
    response_model=FairnessLinkOut,
    summary="A game's public fairness link: its commitment and seeds, and its proof once it has ended",
    description="No API key: the token in the path is the capability. The integrating app hands the link "
    "(the game's `fairness.public_url`) to its players. It serves the signed commitment receipt, the seats' "
    "account ids and client seeds (with who chose each) and the status from the game's creation on, and the "
    "signed proof, which reveals the server seed, once the game has settled or been cancelled; never a "
    "balance, never another game. Once ended, `public_log` says where the game is in its tenant's public "
    "log: `pending` until it is appended (about a second), then its leaf and inclusion proof against the "
    "log's latest signed checkpoint, which is included. It only reads: a turn deadline passed since the "
    "game was last touched is applied by the sweep or the tenant's next read, not by the link. An unknown "
    "or malformed token is the same 404.",
    responses=problems(LINK_NOT_FOUND, STORED),
)
async def fairness_link(
    token: Annotated[str, Path(description="The link's token (from `fairness.public_url`).")],
    request: Request,
) -> FairnessLinkOut:
    async with public_connection(request) as connection:
        return await dealer.fairness_link(connection, token, place_in_log)
