"""Re-running a recorded game. The offline verifier and the property tests both rely on this.

A record is, per accepted action: the action, the balances the shell passed in, and the faces drawn
during that step (in nonce order). Replaying must consume exactly those faces and end in the same state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from pokna_verify.game.actions import Action
from pokna_verify.game.engine import StepResult, step
from pokna_verify.game.errors import ReplayMismatch
from pokna_verify.game.events import Event, Rolled
from pokna_verify.game.model import GameConfig, GameState, new_game


@dataclass(frozen=True)
class RecordedStep:
    action: Action
    faces: tuple[int, ...] = ()
    balances: Mapping[int, int] = field(default_factory=dict)


def faces_rolled(events: Iterable[Event]) -> tuple[int, ...]:
    """The faces a step drew, in nonce order: what a RecordedStep stores."""
    return tuple(event.face for event in events if isinstance(event, Rolled))


def replay_steps(config: GameConfig, steps: Iterable[RecordedStep]) -> tuple[StepResult, ...]:
    """Every step's result, so a verifier can compare events and transfers as well as the end state."""
    state = new_game(config)
    results: list[StepResult] = []
    for index, recorded in enumerate(steps):
        first_nonce = state.next_nonce
        recorded_face = _recorded_faces(index, first_nonce, recorded.faces)
        result = step(state, recorded.action, balances=recorded.balances, roll_face=recorded_face)
        used = result.state.next_nonce - first_nonce
        if used != len(recorded.faces):
            raise ReplayMismatch(
                f"step {index} drew {used} rolls but {len(recorded.faces)} were recorded", step=index
            )
        results.append(result)
        state = result.state
    return tuple(results)


def _recorded_faces(index: int, first_nonce: int, faces: tuple[int, ...]) -> Callable[[int], int]:
    def recorded_face(nonce: int) -> int:
        offset = nonce - first_nonce
        if not 0 <= offset < len(faces):
            raise ReplayMismatch(f"step {index} draws roll {nonce}, which was not recorded", step=index)
        return faces[offset]

    return recorded_face


def replay(config: GameConfig, steps: Iterable[RecordedStep]) -> GameState:
    results = replay_steps(config, steps)
    return results[-1].state if results else new_game(config)
