"""Re-running a proof through the rules engine: the outcome and every transfer must follow from the
recorded actions and the rolls, or the proof is not what the game was.

Each recorded action carries the seat balances the service passed to the engine at that step, capped at
what any one step could spend (`balance_cap`), so the proof shows what affordability decided without
publishing anyone's wallet.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from pokna_verify.fairness.proof import Proof, RecordedRoll
from pokna_verify.game import GameConfig, GameError, GameState, Outcome, action_from_dict, new_game, step
from pokna_verify.game.actions import Action
from pokna_verify.game.engine import RollFace, StepResult
from pokna_verify.game.events import Rolled

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


class StepMemo:
    """pokna_verify.game.step's result for inputs it was already given, so an auditor replaying a bundle's games
    runs the rules once per distinct step rather than once per game's step.

    step is pure and deterministic: equal inputs (the state, the action, the balances, the rolls it draws)
    give an equal result, so the result kept is exactly what the rules would return again. The key holds
    the face of the next nonce; a result is kept only when the step drew no roll but that one, and never
    when it raised. Games of a bundle pass through the same states again and again (the same terms, the
    same first rolls): in the volume bench's bundles over 90 % of the steps repeat one seen before. The
    last `size` distinct steps are kept (a few MB)."""

    def __init__(self, size: int = 2048) -> None:
        self._results: OrderedDict[Hashable, StepResult] = OrderedDict()
        self._size = size

    def step(
        self,
        state: GameState,
        action: Action,
        balances: dict[int, int],
        faces: Mapping[int, RecordedRoll],
        roll_face: RollFace,
    ) -> StepResult:
        nonce = state.next_nonce
        key = (state, action, tuple(balances.items()), faces[nonce].face if nonce in faces else None)
        try:
            kept = self._results.get(key)
        except TypeError:  # an unhashable part: no memo for it
            return step(state, action, balances=balances, roll_face=roll_face)
        if kept is not None:
            self._results.move_to_end(key)
            return kept
        drawn: list[int] = []

        def recording(drawn_nonce: int) -> int:
            drawn.append(drawn_nonce)
            return roll_face(drawn_nonce)

        result = step(state, action, balances=balances, roll_face=recording)
        if all(drawn_nonce == nonce for drawn_nonce in drawn):
            self._results[key] = result
            if len(self._results) > self._size:
                self._results.popitem(last=False)
        return result


Stepper = Callable[[GameState, Action, dict[int, int], Mapping[int, RecordedRoll], RollFace], StepResult]
_memo = StepMemo()


def replay_proof(proof: Proof, stepper: Stepper | None = None) -> str | None:
    """None when the rules reproduce the proof's rolls, outcome and transfers; else the first difference.
    `stepper` runs each step: by default the rules through this process's StepMemo."""
    run_step = _memo.step if stepper is None else stepper
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
            result = run_step(state, action, balances, faces, roll_face)
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
