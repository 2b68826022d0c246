"""The signed proof of a finished game, assembled from what was recorded while it was played."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pokna.dealer.records import (
    ACTION_EVENT,
    MONEY_EVENT,
    EventRecord,
    GameRecord,
    RollRecord,
    SeatRecord,
)
from pokna_verify.fairness.beacon import BeaconChain, BeaconRound
from pokna_verify.fairness.json_reader import JsonReader
from pokna_verify.fairness.proof import (
    RecordedRoll,
    RollPurpose,
    SeatClientSeed,
    SeedSource,
    TransferRecord,
    build_proof,
)
from pokna_verify.fairness.proof_replay import outcome_to_json
from pokna_verify.fairness.terms import GameTerms, SeatAccount
from pokna_verify.game import GameConfig, GameState
from pokna_verify.invariant import present


def signed_terms(
    config: GameConfig, account_ids: list[str], labels: Sequence[str | None] | None = None
) -> GameTerms:
    """The bet as the receipt and the proof sign it: seat 0 is the Vigo, then the players clockwise, each
    with the operator's display label when it gave one."""
    named = list(labels) if labels is not None else [None] * len(account_ids)
    return GameTerms.of(
        config.stake,
        config.challenge_raise,
        [
            SeatAccount(seat, account, label)
            for seat, (account, label) in enumerate(zip(account_ids, named, strict=True))
        ],
        rake_bps=config.rake_bps,
        rake_cap=config.rake_cap,
    )


def _committed_labels(game: GameRecord, seats: Sequence[SeatRecord]) -> list[str | None]:
    """The seats' labels as the commitment receipt signed them at creation: they are stored nowhere else."""
    committed = {seat["seat"]: seat.get("label") for seat in game.receipt["game"]["seats"]}
    return [committed.get(seat.seat) for seat in seats]


def sign_proof(
    game: GameRecord,
    state: GameState,
    signing_key: Ed25519PrivateKey,
    *,
    seats: Sequence[SeatRecord],
    events: Sequence[EventRecord],
    rolls: Sequence[RollRecord],
) -> dict[str, Any]:
    """`events` and `rolls` are every one the game recorded, in order (the finishing step's included)."""
    account_of = {seat.seat: seat.account_id for seat in seats}
    chain = game.receipt.get("beacon_chain")  # a beacon-mode game committed to its chain before play
    return build_proof(
        game_id=game.id,
        server_seed=present(game.revealed_server_seed, "a revealed seed (a proof is built only once it is)"),
        client_seeds=[
            SeatClientSeed(
                seat.seat,
                seat.account_id,
                seat.client_seed or "",
                SeedSource(seat.client_seed_source or "server"),
            )
            for seat in seats
        ],
        terms=signed_terms(state.config, [seat.account_id for seat in seats], _committed_labels(game, seats)),
        rolls=[
            RecordedRoll.of(
                roll.nonce,
                roll.seat,
                account_of[roll.seat],
                RollPurpose(roll.purpose),
                roll.face,
                accepted_at=roll.accepted_at,
                beacon=None if roll.beacon is None else BeaconRound.read(JsonReader(roll.beacon)),
            )
            for roll in rolls
        ],
        actions=[event.payload for event in events if event.kind == ACTION_EVENT],
        outcome=outcome_to_json(state.outcome),
        transfers=[
            TransferRecord(
                event.payload["kind"], event.payload["payer"], event.payload["payee"], event.payload["amount"]
            )
            for event in events
            if event.kind == MONEY_EVENT
        ],
        private_key=signing_key,
        beacon_chain=None if chain is None else BeaconChain.read(JsonReader(chain)),
    )
