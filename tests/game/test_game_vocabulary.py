"""The wire's names of the actions, declared beside the rules' enum (pokna_verify.game.actions), must say what the
enum and the proof's record say: a new action named in one place and not the others fails here."""

from __future__ import annotations

import typing

from pokna_verify.game.actions import SEAT_ACTIONS, ActionName, SeatActionName, TurnAction
from pokna_verify.game.vocabulary import TurnAction as AnswersTurnAction


def test_turn_actions_are_the_actions_a_client_sends() -> None:
    sent = {name.value for name in ActionName} - {ActionName.TIMEOUT.value}  # the table's own clock
    assert set(typing.get_args(TurnAction)) == sent | {"set_client_seed"}
    assert AnswersTurnAction is TurnAction


def test_the_proofs_seat_actions_are_the_seat_actions_the_rules_record() -> None:
    assert set(typing.get_args(SeatActionName)) == set(SEAT_ACTIONS)
