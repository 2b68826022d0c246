"""An action's answer is `GameActionOut`'s JSON, made without building one (pokna.dealer.action.answer.ActionAnswer):
the game's object with its rolls added at the end, byte for byte what the model would dump."""

from __future__ import annotations

import random
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.dealer.action.answer import ActionAnswer
from pokna.dealer.schemas import ActionRollOut, GameActionOut, GameOut
from support.game_play import Api, new_tenant_key, random_policy


def _parts(answer: dict[str, Any]) -> tuple[GameOut, list[ActionRollOut]]:
    shown = GameOut.model_validate({key: value for key, value in answer.items() if key != "rolls"})
    return shown, [ActionRollOut.model_validate(roll) for roll in answer["rolls"]]


def test_the_answer_is_the_models_json_byte_for_byte(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = Api(client, new_tenant_key(sessions))
    seen: set[tuple[str, int]] = set()
    for number in range(4):  # games of every ending and length, their answers with and without rolls
        vigo, players = api.wallet(1_000), [api.wallet(1_000) for _ in range(1 + number % 3)]
        game = api.create_game(vigo, players)
        policy = random_policy(random.Random(number))
        while game["status"] not in ("settled", "cancelled"):
            acted = api.act(game["id"], policy(game))
            assert acted.status_code == 200, acted.text
            shown, rolls = _parts(acted.json())
            made = ActionAnswer(shown, rolls)
            modelled = GameActionOut.model_construct(**dict(shown), rolls=rolls)
            assert made.json() == modelled.model_dump_json() == acted.text
            assert made.model() == modelled
            game = acted.json()
            seen.add((game["status"], len(rolls)))
    assert {status for status, _ in seen} >= {"in_progress", "settled"}
    assert {rolled for _, rolled in seen} >= {0, 1}
