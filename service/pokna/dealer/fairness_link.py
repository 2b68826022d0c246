"""The public fairness link: what a player can open with nothing but the link the integrating app handed
them, no API key.

The link is addressed by a random token (192 bits, never derived from the game id), so knowing a game id,
or another game's link, opens nothing. It serves what the game already publishes to the people at its
table: the signed commitment from creation on, the seats' account ids and client seeds (each with who
chose it) and the status; and once the game has ended (settled or cancelled), the signed proof with the
revealed server seed. Never the server seed before that, never a balance, never another game.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from pokna.dealer.deadlines import Clock, caught_up
from pokna.dealer.links import KEYS_PATH, is_token_shaped
from pokna.dealer.schemas import FairnessLinkOut, LinkClientSeedOut, SignedProofOut
from pokna.dealer.store import game_store
from pokna.errors import NotFound
from pokna.service_keys import ServiceKeys


def fairness_link(session: Session, keys: ServiceKeys, clock: Clock, token: str) -> FairnessLinkOut:
    """The link's document as of now: a deadline passed since the last touch is applied first, exactly as
    for any other read, so an abandoned game reveals its proof when its last deadline has passed."""
    if not is_token_shaped(token):
        raise NotFound("no such fairness link")
    store = game_store(session)
    found = store.game_by_public_token(session, token)
    game, seats = caught_up(session, keys, clock, found.tenant_id, found.id)
    seats = seats if seats is not None else store.seats_of(session, game.id)
    return FairnessLinkOut(
        object="fairness_link",
        game_id=game.id,
        status=game.status,
        revealed=game.proof is not None,
        commitment=game.receipt,
        client_seeds=[
            LinkClientSeedOut(
                seat=seat.seat,
                account_id=seat.account_id,
                client_seed=seat.client_seed,
                source=seat.client_seed_source,
            )
            for seat in seats
        ],
        proof=None if game.proof is None else SignedProofOut.model_validate(game.proof),
        keys_url=KEYS_PATH,
    )
