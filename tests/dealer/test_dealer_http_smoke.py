from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from support.tenant_api import new_tenant


def test_a_whole_game_over_http(client: TestClient, sessions: sessionmaker[Session]) -> None:
    api = new_tenant(client, sessions)
    vigo = api.wallet(100)
    players = [api.wallet(100) for _ in range(3)]
    created = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": players, "stake": 5})
    assert created.status_code == 201, created.text
    game = created.json()
    assert game["status"] == "open"
    game_id = game["id"]
    for _ in range(50):
        if game["status"] in ("settled", "cancelled"):
            break
        turn = game["turn"]
        account = turn["account_ids"][0]
        allowed = turn["allowed_actions"]
        if "start" in allowed:
            body = {"type": "start", "account_id": account}
        elif "vote" in allowed:
            body = {"type": "vote", "account_id": account, "choice": "split"}
        elif "claim" in allowed:
            body = {"type": "claim", "account_id": account}
        else:
            body = {"type": "roll", "account_id": account}
        response = api.post(f"/v1/games/{game_id}/actions", body)
        assert response.status_code == 200, response.text
        game = response.json()
    assert game["status"] == "settled"
    assert game["pot"] == 0
    total = sum(api.balance(account) for account in [vigo, *players])
    assert total == 400
    proof = api.get(f"/v1/games/{game_id}/proof").json()
    assert proof["server_seed_hash"] == game["fairness"]["server_seed_hash"]
    events = api.get(f"/v1/games/{game_id}/events", params={"limit": 100}).json()
    assert events["data"][0]["kind"] == "game_created"


def test_an_action_after_the_end_is_a_409_problem_carrying_the_game(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = new_tenant(client, sessions)
    vigo, player = api.wallet(10), api.wallet(10)
    game = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 1}).json()
    cancelled = api.post(f"/v1/games/{game['id']}/actions", {"type": "cancel"})
    assert cancelled.json()["status"] == "cancelled"
    refused = api.post(f"/v1/games/{game['id']}/actions", {"type": "start", "account_id": vigo})
    assert refused.status_code == 409
    assert refused.headers["content-type"] == "application/problem+json"
    body = refused.json()
    assert body["code"] == "game_over"
    assert body["game"]["status"] == "cancelled"
    assert body["game"]["ended_at"] is not None
