"""The signed proof of a finished game, assembled from what was recorded while it was played."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy.orm import Session

from pokna.db.models.game import Game, GameSeat
from pokna.fairness.proof import (
    RecordedRoll,
    RollPurpose,
    SeatClientSeed,
    SeedSource,
    TransferRecord,
    build_proof,
)
from pokna.fairness.replay import outcome_to_json
from pokna.fairness.terms import GameTerms, SeatAccount
from pokna.game import GameState
from pokna.games import repository


def signed_terms(stake: int, challenge_raise: int, account_ids: list[str]) -> GameTerms:
    """The bet as the receipt and the proof sign it: seat 0 is the Vigo, then the players clockwise."""
    return GameTerms.of(
        stake, challenge_raise, [SeatAccount(seat, account) for seat, account in enumerate(account_ids)]
    )


def sign_proof(
    session: Session,
    game: Game,
    state: GameState,
    signing_key: Ed25519PrivateKey,
    *,
    seats: Sequence[GameSeat] | None = None,
) -> dict[str, Any]:
    """`seats`, in seat order, when the caller already holds them (saves reading them again)."""
    assert game.revealed_server_seed is not None, "a proof is built only once the seed is revealed"
    if seats is None:
        seats = repository.seats_of(session, game.id)
    events = repository.events_of_kinds(session, game.id, (repository.ACTION_EVENT, repository.MONEY_EVENT))
    account_of = {seat.seat: seat.account_id for seat in seats}
    return build_proof(
        game_id=game.id,
        server_seed=game.revealed_server_seed,
        client_seeds=[
            SeatClientSeed(
                seat.seat,
                seat.account_id,
                seat.client_seed or "",
                SeedSource(seat.client_seed_source or "server"),
            )
            for seat in seats
        ],
        terms=signed_terms(game.stake, game.challenge_raise, [seat.account_id for seat in seats]),
        rolls=[
            RecordedRoll.of(
                roll.nonce, roll.seat, account_of[roll.seat], RollPurpose(roll.purpose), roll.face
            )
            for roll in repository.rolls_of(session, game.id)
        ],
        actions=[event.payload for event in events if event.kind == repository.ACTION_EVENT],
        outcome=outcome_to_json(state.outcome),
        transfers=[
            TransferRecord(
                event.payload["kind"], event.payload["payer"], event.payload["payee"], event.payload["amount"]
            )
            for event in events
            if event.kind == repository.MONEY_EVENT
        ],
        private_key=signing_key,
    )
