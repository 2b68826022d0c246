"""The public fairness link: what a player can open with nothing but the link the integrating app handed
them, no API key.

The link is addressed by a random token (192 bits, never derived from the game id), so knowing a game id,
or another game's link, opens nothing. It serves what the game already publishes to the people at its
table: the signed commitment from creation on, the seats' account ids and client seeds (each with who
chose it) and the status; and once the game has ended (settled or cancelled), the signed proof with the
revealed server seed. Never the server seed before that, never a balance, never another game.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from pokna.dealer.link_log import PlaceInLog
from pokna.dealer.proof_schemas import CommitmentReceiptOut, SignedProofOut
from pokna.dealer.schemas import (
    FairnessLinkOut,
    FairnessLinkPendingOut,
    FairnessLinkRevealedOut,
    LinkClientSeedOut,
)
from pokna.dealer.store_postgres import linked_game
from pokna.errors import NotFound
from pokna_verify.fairness.links import KEYS_PATH, is_token_shaped


async def fairness_link(
    connection: AsyncConnection[Any], token: str, place_in_log: PlaceInLog
) -> FairnessLinkOut:
    """The game as last decided, read and never written: a deadline that has passed since is not applied
    here, so the link may show a turn whose deadline has run out, until `pokna sweep` (every minute under
    Compose) or the tenant's next read or action applies it; an abandoned game reveals its proof then.

    Why a reader does not catch the game up, as the tenant's own reads do: the link is public, needs no
    key and is not rate limited per tenant, so applying deadlines on it would let anyone who holds it make
    the service lock the game, post to the tenant's ledger, sign the proof and send the tenant's webhooks
    whenever they like, and every reader of a busy link would queue on the game's lock. What the link
    shows instead is the committed state, which is everything that has been decided: a deadline's default
    action is fixed by the rules and stamped at the deadline itself whenever it is applied
    (`pokna.dealer.action.decision.apply_passed_deadlines`), so applying it later changes nothing a player can check.

    `place_in_log` gives a finished game's place in its tenant's public log (pokna.dealer.link_log)."""
    if not is_token_shaped(token):
        raise NotFound("no such fairness link")
    game, seats = await linked_game(connection, token)
    client_seeds = [
        LinkClientSeedOut(
            seat=seat.seat,
            account_id=seat.account_id,
            client_seed=seat.client_seed,
            source=seat.client_seed_source,
        )
        for seat in seats
    ]
    commitment = CommitmentReceiptOut.model_validate(game.receipt)
    if game.proof is None:
        return FairnessLinkOut(
            FairnessLinkPendingOut(
                object="fairness_link",
                game_id=game.id,
                status=game.status,
                revealed=False,
                commitment=commitment,
                client_seeds=client_seeds,
                proof=None,
                keys_url=KEYS_PATH,
            )
        )
    return FairnessLinkOut(
        FairnessLinkRevealedOut(
            object="fairness_link",
            game_id=game.id,
            status=game.status,
            revealed=True,
            commitment=commitment,
            client_seeds=client_seeds,
            proof=SignedProofOut.model_validate(game.proof),
            keys_url=KEYS_PATH,
            public_log=await place_in_log(connection, game.tenant_id, game.id, game.log_index),
        )
    )
