from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from support.tenant_api import new_tenant


@pytest.mark.citus
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


@pytest.mark.citus
def test_what_a_write_answers_is_what_a_read_then_reads(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """Every answer is built once, as the documented model: a POST's body is byte for byte the GET's, its
    timestamps included (RFC 3339 in UTC, `Z`)."""
    api = new_tenant(client, sessions)
    vigo, player = api.wallet(10), api.wallet(10)
    created = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 1})
    assert created.status_code == 201, created.text
    game_id = created.json()["id"]
    assert created.json() == api.get(f"/v1/games/{game_id}").json()
    assert created.json()["created_at"].endswith("Z")
    assert created.json()["turn"]["deadline_at"].endswith("Z")
    seeded = api.post(
        f"/v1/games/{game_id}/actions",
        {"type": "set_client_seed", "account_id": player, "client_seed": "r2-d2"},
    )
    assert seeded.status_code == 200, seeded.text
    assert seeded.json().pop("rolls") == []  # an action's answer is the game plus the rolls it made
    assert {key: value for key, value in seeded.json().items() if key != "rolls"} == api.get(
        f"/v1/games/{game_id}"
    ).json()
    assert api.get(f"/v1/games/{game_id}/proof").json() == {
        "game_id": game_id,
        "status": "open",
        "revealed": False,
        "commitment": created.json()["fairness"]["commitment"],
    }

    table = api.post("/v1/tables", {"account_ids": [vigo, player], "stake": 1})
    assert table.status_code == 201, table.text
    assert table.json() == api.get(f"/v1/tables/{table.json()['id']}").json()
    dealt = api.post(f"/v1/tables/{table.json()['id']}/rounds")
    assert dealt.status_code == 201, dealt.text
    assert dealt.json() == api.get(f"/v1/games/{dealt.json()['id']}").json()
    assert api.get(f"/v1/tables/{table.json()['id']}").json()["rounds"] == [
        {
            "round_number": 1,
            "game_id": dealt.json()["id"],
            "status": "open",
            "vigo_account_id": vigo,
            "outcome": None,
        }
    ]
