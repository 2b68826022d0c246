"""Real bundles for the audit tests: games played over HTTP by an integrating app, a deposit and a
withdrawal, a signed checkpoint in the middle, then the bundle as GET /v1/audit/bundle streams it."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna_verify.fairness.keyring import KeyRing
from support.game_play import Api, new_tenant_key, obliging, play, random_policy


@dataclass
class PlayedBooks:
    api: Api
    key_ring: KeyRing
    game_ids: list[str]

    def bundle(self, **params: Any) -> list[str]:
        response = self.api.get("/v1/audit/bundle", **params)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/x-ndjson")
        return response.text.splitlines(keepends=True)


def play_books(
    client: TestClient,
    sessions: sessionmaker[Session],
    *,
    games: int = 5,
    seed: int = 7,
    rake: dict[str, int] | None = None,
) -> PlayedBooks:
    """`games` finished games (settled, and a cancelled one) between four wallets, a checkpoint after the
    first half, and a withdrawal at the end; every game with `rake` terms when given."""
    api = Api(client, new_tenant_key(sessions))
    rng = random.Random(seed)
    wallets = [api.wallet(400) for _ in range(4)]
    game_ids = []
    for index in range(games):
        seats = rng.sample(wallets, 3)
        terms: dict[str, Any] = {"rake": rake} if rake is not None else {}
        game = api.create_game(seats[0], seats[1:], stake=5, challenge_raise=3, **terms)
        policy = obliging if index % 2 == 0 else random_policy(rng, cancel_chance=0.0)
        if index == 1:
            game = api.ok(api.act(game["id"], {"type": "cancel"}))
        play([api], game, policy)
        game_ids.append(game["id"])
        if index == games // 2:
            api.ok(api.post("/v1/ledger/checkpoints", idempotency_key=f"checkpoint-{index}"), 201)
    api.ok(api.withdraw(wallets[0], 7), 201)
    api.ok(api.post("/v1/ledger/checkpoints", idempotency_key="checkpoint-end"), 201)
    return PlayedBooks(api, api.key_ring(), game_ids)


def records(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


def lines_of(documents: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(document) + "\n" for document in documents]
