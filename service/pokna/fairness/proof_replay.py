"""Re-running a proof through the rules engine: the outcome and every transfer must follow from the
recorded actions and the rolls, or the proof is not what the game was.

Each recorded action carries the seat balances the service passed to the engine at that step, capped at
what any one step could spend (`balance_cap`), so the proof shows what affordability decided without
publishing anyone's wallet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pokna.fairness.proof import Proof
from pokna.game import GameConfig, GameError, Outcome, action_from_dict, new_game, step
from pokna.game.events import Rolled

CANCELLED_OUTCOME = {"reason": "cancelled", "payouts": []}


def balance_cap(stake: int, challenge_raise: int, player_count: int) -> int:
    """No single step spends more than this from one seat (a Vigo paying for every survivor, or a raise)."""
    return stake * player_count + challenge_raise


def recorded_balances(balances: Mapping[int, int], cap: int) -> dict[str, int]:
    return {str(seat): min(max(amount, 0), cap) for seat, amount in sorted(balances.items())}


def outcome_to_json(outcome: Outcome | None) -> dict[str, Any]:
    if outcome is None:
        return dict(CANCELLED_OUTCOME)
    return {
        "reason": outcome.reason.value,
        "payouts": [{"seat": payout.seat, "amount": payout.amount} for payout in outcome.payouts],
    }


def replay_proof(proof: Proof) -> str | None:
    """None when the rules reproduce the proof's rolls, outcome and transfers; else the first difference."""
    try:
        config = GameConfig.create(
            stake=proof.game.stake,
            challenge_raise=proof.game.challenge_raise,
            player_count=len(proof.game.seats) - 1,
            rake_bps=proof.game.rake_bps,
            rake_cap=proof.game.rake_cap,
        )
    except GameError as error:
        return f"game terms: {error}"
    faces = {roll.nonce: roll for roll in proof.rolls}
    state = new_game(config)
    transfers: list[dict[str, Any]] = []
    rolled: list[Rolled] = []

    def roll_face(nonce: int) -> int:
        if nonce not in faces:
            raise _Missing(nonce)
        return faces[nonce].face

    for index, record in enumerate(proof.actions):
        try:
            action = action_from_dict(dict(record))
            balances = {int(seat): int(amount) for seat, amount in dict(record.get("balances", {})).items()}
            result = step(state, action, balances=balances, roll_face=roll_face)
        except _Missing as missing:
            return f"action {index}: the rules draw roll nonce {missing.nonce}, which the proof does not have"
        except (GameError, ValueError, TypeError, AttributeError) as error:
            return f"action {index} ({record.get('action')!r}): the rules refuse it: {error}"
        transfers += [transfer.to_dict() for transfer in result.transfers]
        rolled += [event for event in result.events if isinstance(event, Rolled)]
        state = result.state
    if len(rolled) != len(proof.rolls):
        return f"the rules draw {len(rolled)} rolls; the proof records {len(proof.rolls)}"
    for event, roll in zip(rolled, sorted(proof.rolls, key=lambda entry: entry.nonce), strict=True):
        if (event.seat, event.purpose.value) != (roll.seat, roll.purpose):
            return (
                f"roll nonce {roll.nonce}: the rules have seat {event.seat} rolling for {event.purpose.value}, "
                f"the proof says seat {roll.seat} for {roll.purpose}"
            )
    if not state.is_over:
        return f"after every recorded action the game is still in phase {state.phase.value}"
    recorded_transfers = [transfer.to_json() for transfer in proof.transfers]
    if transfers != recorded_transfers:
        for position, (expected, found) in enumerate(zip(transfers, recorded_transfers, strict=False)):
            if expected != found:
                return f"transfer {position}: the rules move {expected}, the proof records {found}"
        return f"the rules make {len(transfers)} transfers; the proof records {len(recorded_transfers)}"
    expected_outcome = outcome_to_json(state.outcome)
    if dict(proof.outcome) != expected_outcome:
        return f"outcome: the rules end with {expected_outcome}, the proof says {dict(proof.outcome)}"
    return None


class _Missing(Exception):
    def __init__(self, nonce: int) -> None:
        super().__init__(nonce)
        self.nonce = nonce
