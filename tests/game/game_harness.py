"""Test support for the game engine: scripted rolls and a toy ledger that holds the engine to its word.

Named uniquely (not conftest/helpers) because tests/ has no __init__.py files and module basenames share
one namespace under pytest and mypy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pokna_verify.game import (
    POT,
    REVENUE,
    Action,
    GameConfig,
    GameState,
    Phase,
    RecordedStep,
    StepResult,
    Transfer,
    faces_rolled,
    new_game,
    step,
)
from pokna_verify.game.events import Rolled


class ScriptedRolls:
    """A roll source that hands out faces in order and fails the test if asked out of nonce order."""

    def __init__(self, faces: Iterable[int] = (), first_nonce: int = 0) -> None:
        self.faces = list(faces)
        self.next_nonce = first_nonce
        self.calls: list[int] = []

    def __call__(self, nonce: int) -> int:
        assert nonce == self.next_nonce, f"roll {nonce} asked for, expected {self.next_nonce}"
        assert self.faces, f"roll {nonce} asked for but the script has run out"
        self.calls.append(nonce)
        self.next_nonce += 1
        return self.faces.pop(0)


class DrawnRolls:
    """A roll source fed by a callback (e.g. hypothesis' data.draw), still checking nonce order."""

    def __init__(self, draw_face: Callable[[], int]) -> None:
        self.draw_face = draw_face
        self.next_nonce = 0
        self.calls = 0

    def __call__(self, nonce: int) -> int:
        assert nonce == self.next_nonce, f"roll {nonce} asked for, expected {self.next_nonce}"
        self.next_nonce += 1
        self.calls += 1
        return self.draw_face()


def no_rolls(nonce: int) -> int:
    raise AssertionError(f"roll {nonce} drawn where no roll was expected")


@dataclass
class ToyLedger:
    """Posts the engine's transfers onto plain balances and refuses any overdraft."""

    balances: dict[int, int]
    pot: int = 0
    revenue: int = 0

    def post(self, transfers: Iterable[Transfer]) -> None:
        for transfer in transfers:
            if transfer.payee is REVENUE:
                assert transfer.payer is POT
                self.pot -= transfer.amount
                assert self.pot >= 0, f"{transfer} overdraws the pot"
                self.revenue += transfer.amount
            elif transfer.payee is POT:
                assert isinstance(transfer.payer, int)
                self.balances[transfer.payer] -= transfer.amount
                assert self.balances[transfer.payer] >= 0, f"{transfer} overdraws seat {transfer.payer}"
                self.pot += transfer.amount
            else:
                assert transfer.payer is POT
                assert isinstance(transfer.payee, int)
                self.pot -= transfer.amount
                assert self.pot >= 0, f"{transfer} overdraws the pot"
                self.balances[transfer.payee] += transfer.amount

    @property
    def total(self) -> int:
        return sum(self.balances.values()) + self.pot + self.revenue


@dataclass
class Table:
    """One game driven step by step against a toy ledger, recording what a verifier would need."""

    config: GameConfig
    ledger: ToyLedger
    state: GameState = field(init=False)
    records: list[RecordedStep] = field(default_factory=list)
    results: list[StepResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.state = new_game(self.config)

    @classmethod
    def seated(cls, config: GameConfig, balances: dict[int, int]) -> Table:
        return cls(config, ToyLedger(dict(balances)))

    def act(self, action: Action, roll_face: Callable[[int], int]) -> StepResult:
        balances = dict(self.ledger.balances)
        result = step(self.state, action, balances=balances, roll_face=roll_face)
        self.ledger.post(result.transfers)
        assert self.ledger.pot == result.state.pot
        self.records.append(RecordedStep(action, faces_rolled(result.events), balances))
        self.results.append(result)
        self.state = result.state
        check_state(result.state)
        return result

    def rolled(self) -> list[Rolled]:
        return [event for result in self.results for event in result.events if isinstance(event, Rolled)]


def check_state(state: GameState) -> None:
    """Invariants that hold after every step, whatever happened."""
    assert state.pot == sum(state.paid_in) - sum(state.paid_out) - state.rake >= 0
    assert state.paid_in[0] <= sum(state.paid_in)
    if state.phase is Phase.SETTLED:
        assert state.pot == 0
        assert state.outcome is not None
        assert sum(payout.amount for payout in state.outcome.payouts) + state.rake == sum(state.paid_in)
        # The rake is taken once, on the whole pot: never above its rate (rounded down) nor its cap.
        config = state.config
        assert state.rake * 10_000 <= sum(state.paid_in) * config.rake_bps
        assert config.rake_cap is None or state.rake <= config.rake_cap
    else:
        assert state.outcome is None
        assert state.rake == 0
    if state.phase is Phase.CANCELLED:
        assert sum(state.paid_in) == 0
        assert state.next_nonce == 0
