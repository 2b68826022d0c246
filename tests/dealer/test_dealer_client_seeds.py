"""The client seeds fixed when a game starts (or is cancelled before it) are the ones stored: a fresh read
of the game shows the seeds the action answered with, and the proof is built from exactly those."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna_verify.fairness.protocol import game_client_seed
from support.tenant_api import TenantApi, new_tenant


def _seeds(game: dict[str, Any]) -> list[tuple[str | None, str | None]]:
    return [(seat["client_seed"], seat["client_seed_source"]) for seat in game["seats"]]


def _play_to_the_end(api: TenantApi, game: dict[str, Any]) -> dict[str, Any]:
    while game["status"] == "in_progress":
        turn = game["turn"]
        allowed = turn["allowed_actions"]
        body = {"type": "roll", "account_id": turn["account_ids"][0]}
        if "vote" in allowed:
            body = {"type": "vote", "account_id": turn["account_ids"][0], "choice": "split"}
        elif "claim" in allowed:
            body["type"] = "claim"
        response = api.post(f"/v1/games/{game['id']}/actions", body)
        assert response.status_code == 200, response.text
        game = response.json()
    return game


def _proof_seeds(api: TenantApi, game_id: str) -> tuple[list[tuple[str, str]], str]:
    proof = api.get(f"/v1/games/{game_id}/proof").json()
    return [(entry["client_seed"], entry["source"]) for entry in proof["client_seeds"]], proof["client_seed"]


def test_the_seeds_fixed_at_the_start_are_stored(client: TestClient, sessions: sessionmaker[Session]) -> None:
    api = new_tenant(client, sessions)
    vigo, players = api.wallet(100), [api.wallet(100), api.wallet(100)]
    game = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": players, "stake": 5}).json()
    seeded = {"type": "set_client_seed", "account_id": players[0], "client_seed": "jabba"}
    assert api.post(f"/v1/games/{game['id']}/actions", seeded).status_code == 200
    started = api.post(f"/v1/games/{game['id']}/actions", {"type": "start", "account_id": vigo}).json()
    assert started["status"] == "in_progress"
    seeds = _seeds(started)
    assert [source for _, source in seeds] == ["server", "player", "server"]
    assert seeds[1][0] == "jabba"
    assert all(seed for seed, _ in seeds)
    assert seeds[0][0] != seeds[2][0]

    fresh = api.get(f"/v1/games/{game['id']}").json()
    assert _seeds(fresh) == seeds
    combined = game_client_seed([seed or "" for seed, _ in seeds])
    assert fresh["fairness"]["client_seed"] == combined

    assert _play_to_the_end(api, fresh)["status"] == "settled"
    assert _proof_seeds(api, game["id"]) == (seeds, combined)


def test_the_seeds_fixed_by_a_cancel_before_the_start_are_stored(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = new_tenant(client, sessions)
    vigo, player = api.wallet(100), api.wallet(100)
    game = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 5}).json()
    cancelled = api.post(f"/v1/games/{game['id']}/actions", {"type": "cancel"}).json()
    assert cancelled["status"] == "cancelled"
    seeds = _seeds(cancelled)
    assert [source for _, source in seeds] == ["server", "server"]
    assert all(seed for seed, _ in seeds)

    assert _seeds(api.get(f"/v1/games/{game['id']}").json()) == seeds
    assert _proof_seeds(api, game["id"]) == (seeds, game_client_seed([seed or "" for seed, _ in seeds]))
