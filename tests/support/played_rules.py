"""Games played by the pure rules (no service, no proofs signed), turned into the facts the period report
takes from a verified proof (pokna_verify.bundle.play_facts): many games in a second, with any face source, any
policy, and, for tests of the report itself, payouts the rules would never make."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from pokna_verify.bundle.play_facts import PlayFacts, play_facts
from pokna_verify.fairness.proof import RecordedRoll, RollPurpose, TransferRecord
from pokna_verify.fairness.protocol import faces
from pokna_verify.fairness.terms import GameTerms, SeatAccount
from pokna_verify.game import (
    Challenge,
    Claim,
    GameConfig,
    GameState,
    Phase,
    Roll,
    Start,
    Transfer,
    TransferKind,
    Vote,
    VoteChoice,
    new_game,
    step,
    turn,
)
from pokna_verify.game.actions import Action, action_to_dict
from pokna_verify.game.events import Rolled
from pokna_verify.game.odds import LonePolicy, Policy, VotePolicy
from pokna_verify.game.transfers import party_to_json

FaceSource = Callable[[], int]
# Alters a game's transfers before they become facts: what a broken payout rule would post.
Alteration = Callable[[list[Transfer]], list[Transfer]]
UNLIMITED = 10**12


def honest_faces(seed: str) -> Iterator[int]:
    """The service's own roll stream (HMAC-SHA256 of a server seed and a client seed), nonce after nonce."""
    server_seed, client_seed = hashlib.sha256(seed.encode()).hexdigest(), f"client-{seed}"
    nonce = 0
    while True:
        yield from faces(server_seed, client_seed, list(range(nonce, nonce + 4096)))
        nonce += 4096


def loaded_faces(seed: int, face: int, extra: float) -> Iterator[int]:
    """A cube that shows `face` with probability 1/6 + `extra`, the other five equally often."""
    rng = random.Random(seed)
    weights = [(1 - (1 / 6 + extra)) / 5] * 6
    weights[face - 1] = 1 / 6 + extra
    while True:
        yield from rng.choices(range(1, 7), weights, k=4096)


def play_games(
    config: GameConfig,
    policy: Policy,
    games: int,
    rolls: Iterator[int],
    alteration: Alteration | None = None,
) -> list[PlayFacts]:
    return [_one_game(config, policy, rolls, alteration) for _ in range(games)]


def _one_game(
    config: GameConfig, policy: Policy, rolls: Iterator[int], alteration: Alteration | None
) -> PlayFacts:
    state = new_game(config)
    balances = dict.fromkeys(config.seats, UNLIMITED)
    actions: list[dict[str, Any]] = []
    recorded: list[RecordedRoll] = []
    transfers: list[Transfer] = []
    while not state.is_over:
        action = _decide(state, policy)
        result = step(state, action, balances=balances, roll_face=lambda _nonce: next(rolls))
        actions.append(action_to_dict(action))
        recorded += [
            RecordedRoll.of(
                event.nonce, event.seat, f"seat{event.seat}", RollPurpose(event.purpose), event.face
            )
            for event in result.events
            if isinstance(event, Rolled)
        ]
        transfers += result.transfers
        state = result.state
    if alteration is not None:
        transfers = alteration(transfers)
    assert state.outcome is not None
    terms = GameTerms.of(
        config.stake,
        config.challenge_raise,
        [SeatAccount(seat, f"seat{seat}") for seat in config.seats],
        rake_bps=config.rake_bps,
        rake_cap=config.rake_cap,
    )
    records = [
        TransferRecord(t.kind.value, party_to_json(t.payer), party_to_json(t.payee), t.amount)
        for t in transfers
    ]
    return play_facts(terms, recorded, actions, {"reason": state.outcome.reason.value}, records)


def _decide(state: GameState, policy: Policy) -> Action:
    seat = turn(state).seats[0]
    if state.phase is Phase.OPEN:
        return Start(seat)
    if state.phase is Phase.LONE_SURVIVOR:
        return Claim(seat) if policy.lone is LonePolicy.CLAIM else Challenge(seat)
    if state.phase is Phase.VOTING:
        choice = VoteChoice.SPLIT if policy.vote is VotePolicy.SPLIT else VoteChoice.ROLL_AGAIN
        return Vote(seat, choice)
    return Roll(seat)


def short_payouts(kept: int) -> Alteration:
    """A broken payout rule: a whole pot paid to a player (a claim, a challenge won) arrives `kept` units
    short; the rest stays in the pot."""

    def alter(transfers: list[Transfer]) -> list[Transfer]:
        last = transfers[-1]
        if last.kind is not TransferKind.PAYOUT or last.payee == 0 or last.amount <= kept:
            return transfers
        return [*transfers[:-1], replace(last, amount=last.amount - kept)]

    return alter
