"""The action's lock reads what a proof signs exactly ahead of every step that can end a game
(pokna.dealer.action.locked.MAY_END), so that the action that ends a game is no round trip dearer. The SQL
condition is rules knowledge written in SQL: here it is held to the rules themselves, on every state of
every path of small games (each colour sequence, each decision, each timeout, the Vigo rich and poor),
evaluated by PostgreSQL on the state as the service stores it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine, text

from pokna.dealer.action.locked import may_end
from pokna_verify.game import (
    Action,
    Cancel,
    Challenge,
    Claim,
    GameConfig,
    GameError,
    GameState,
    Phase,
    Roll,
    Start,
    Timeout,
    Vote,
    VoteChoice,
    new_game,
    state_to_dict,
    step,
    turn,
)


def _steps(state: GameState) -> list[tuple[Action, int | None]]:
    now = turn(state)
    if state.phase is Phase.OPEN:
        return [*((Start(0), face) for face in (3, 4)), (Cancel(), None), (Timeout(), None)]
    seats = now.seats
    actions: list[tuple[Action, int | None]] = [(Timeout(), face) for face in (3, 4)]
    for seat in seats:
        actions += [(Roll(seat), face) for face in (3, 4)]
        actions += [(Claim(seat), None), (Challenge(seat), None)]
        actions += [(Vote(seat, choice), None) for choice in VoteChoice]
    return actions


def _always(face: int) -> Callable[[int], int]:
    return lambda nonce: face


def _explore(config: GameConfig, balances: dict[int, int], max_passes: int) -> list[tuple[Any, bool]]:
    """Every state reached that is not over, with whether some step from it ends the game."""
    seen: list[tuple[Any, bool]] = []

    def visit(state: GameState, wallets: dict[int, int]) -> None:
        if state.is_over or state.pass_number > max_passes:
            return
        ends = False
        for action, face in _steps(state):
            try:
                result = step(state, action, balances=wallets, roll_face=_always(face or 3))
            except GameError:
                continue
            after = dict(wallets)
            for transfer in result.transfers:
                if isinstance(transfer.payer, int):
                    after[transfer.payer] -= transfer.amount
                if isinstance(transfer.payee, int):
                    after[transfer.payee] += transfer.amount
            ends = ends or result.state.is_over
            visit(result.state, after)
        seen.append((state_to_dict(state), ends))

    visit(new_game(config), balances)
    return seen


@pytest.mark.parametrize(
    ("player_count", "balances", "passes"),
    [
        (1, {0: 100, 1: 100}, 2),
        (2, {0: 100, 1: 100, 2: 100}, 2),
        (2, {0: 5, 1: 100, 2: 100}, 2),  # the Vigo busts at a second pass's contribution or a raise
        (3, {0: 100, 1: 100, 2: 100, 3: 100}, 1),
    ],
)
def test_the_lock_reads_the_proofs_records_before_every_step_that_can_end_the_game(
    engine: Engine, player_count: int, balances: dict[int, int], passes: int
) -> None:
    states = _explore(GameConfig(stake=2, challenge_raise=3, player_count=player_count), balances, passes)
    condition = may_end("CAST(value AS json)")
    each_state = "json_array_elements(CAST(:states AS json)) WITH ORDINALITY"
    with engine.connect() as connection:
        predicted = (
            connection.execute(
                text(f"SELECT {condition} FROM {each_state} ORDER BY ordinality"),
                {"states": json.dumps([state for state, _ in states])},
            )
            .scalars()
            .all()
        )
    assert len(predicted) == len(states)
    missed = [state for (state, ends), read in zip(states, predicted, strict=True) if ends and not read]
    assert not missed, missed[:3]
    # And it is a filter, not a blanket read: most states cannot end in one step, and are not read.
    needless = sum(1 for (_, ends), read in zip(states, predicted, strict=True) if read and not ends)
    skipped = sum(1 for read in predicted if not read)
    assert skipped > needless, (skipped, needless)
