"""The public fairness link, as a player holding nothing but the link meets it, and the rolls an action
answers with. Both databases; the player's client sends no API key."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna_verify.fairness.keyring import KeyRing
from support.api_checks import assert_problem
from support.game_play import Api, Game, new_tenant_key, random_policy, verify

LINK_KEYS = {"object", "game_id", "status", "revealed", "commitment", "client_seeds", "proof", "keys_url"}


def _api(client: TestClient, sessions: sessionmaker[Session], name: str = "Mos Espa") -> Api:
    return Api(client, new_tenant_key(sessions, name))


def _link(client: TestClient, game: Game) -> dict[str, Any]:
    """Fetched as a player would: the path the game carries, no Authorization header."""
    response = client.get(game["fairness"]["public_url"])
    assert response.status_code == 200, response.text
    link: dict[str, Any] = response.json()
    return link


def test_a_player_follows_a_game_through_its_link_and_gets_the_proof_at_the_end(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = _api(client, sessions)
    vigo, han, leia = (api.wallet(100) for _ in range(3))
    game = api.create_game(vigo, [han, leia], stake=5)
    token = game["fairness"]["public_url"].rsplit("/", 1)[1]
    assert len(token) >= 32
    assert game["id"] not in token
    assert game["id"].split("_", 1)[1] not in token
    assert game["fairness"]["verify_url"] == f"/verify?proof={token}"

    seen: list[str] = []  # every body the link served before the end
    api.ok(api.act(game["id"], {"type": "set_client_seed", "account_id": han, "client_seed": "han.1"}))
    link = _link(client, game)
    seen.append(json.dumps(link))
    assert set(link) == LINK_KEYS
    assert (link["object"], link["game_id"], link["status"], link["revealed"]) == (
        "fairness_link",
        game["id"],
        "open",
        False,
    )
    assert link["proof"] is None
    assert link["commitment"] == game["fairness"]["commitment"]
    assert [
        (seed["seat"], seed["account_id"], seed["client_seed"], seed["source"])
        for seed in link["client_seeds"]
    ] == [
        (0, vigo, None, None),
        (1, han, "han.1", "player"),
        (2, leia, None, None),
    ]
    rng = random.Random(7)
    policy = random_policy(rng, cancel_chance=0.0)
    while game["status"] not in ("settled", "cancelled"):
        game = api.ok(api.act(game["id"], policy(game)))
        link = _link(client, game)
        if not link["revealed"]:
            seen.append(json.dumps(link))
            assert link["status"] == game["status"]
            assert link["proof"] is None
    assert link["revealed"]
    assert link["status"] == game["status"]
    proof = api.proof(game["id"])
    assert link["proof"] == proof
    server_seed = proof["server_seed"]
    assert all(server_seed not in body for body in seen), "the link leaked the server seed before the end"
    assert [seed["source"] for seed in link["client_seeds"]] == ["server", "player", "server"]
    # The player checks it with the published keys and the receipt the link carries: every check runs.
    keys = KeyRing.from_json(client.get(link["keys_url"]).json())
    report = verify(link["proof"], keys, receipt=link["commitment"])
    assert report.valid, report.to_json()
    assert not report.not_run, report.to_json()


def test_the_link_shows_nothing_of_the_tenant_beyond_the_game(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = _api(client, sessions)
    vigo, han = api.wallet(1000), api.wallet(1000)
    other = api.create_game(vigo, [han], stake=7)
    game = api.create_game(vigo, [han], stake=5)
    link = _link(client, game)
    text = json.dumps(link)
    assert other["id"] not in text
    assert other["pot_account_id"] not in text
    assert game["pot_account_id"] not in text
    assert "balance" not in text
    assert "1000" not in text


@pytest.mark.parametrize(
    "token",
    ["A" * 32, "not-a-token", "x", "%00" * 3, "Yc2rJ0b6kq3o2Qh8W1mVnA5sT9xE4uLd" + "!" * 3],
)
def test_a_wrong_token_is_the_same_404_whatever_it_looks_like(client: TestClient, token: str) -> None:
    response = client.get(f"/v1/fairness/proofs/{token}")
    problem = assert_problem(response, 404, "not_found")
    assert problem["detail"] == "no such fairness link"


def test_a_link_does_not_open_another_link_or_the_games_own_routes(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = _api(client, sessions)
    vigo, han = api.wallet(100), api.wallet(100)
    game = api.create_game(vigo, [han], stake=5)
    token = game["fairness"]["public_url"].rsplit("/", 1)[1]
    # The token is no API key, and a game id is no token.
    assert (
        client.get(f"/v1/games/{game['id']}", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    )
    assert_problem(client.get(f"/v1/fairness/proofs/{game['id']}"), 404, "not_found")
    assert_problem(client.get(f"/v1/fairness/proofs/{token[:-1]}"), 404, "not_found")


def test_an_action_answers_with_the_rolls_it_made(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = _api(client, sessions)
    vigo, han, leia = (api.wallet(100) for _ in range(3))
    game = api.create_game(vigo, [han, leia], stake=5)
    seeded = api.ok(api.act(game["id"], {"type": "set_client_seed", "account_id": han, "client_seed": "h"}))
    assert seeded["rolls"] == []
    answers = []
    policy = random_policy(random.Random(11), cancel_chance=0.0)
    current: Game = seeded
    while current["status"] not in ("settled", "cancelled"):
        current = api.ok(api.act(game["id"], policy(current)))
        answers.append(current)
    rolled = [event["data"] for event in api.events(game["id"]) if event["kind"] == "rolled"]
    answered = [roll for answer in answers for roll in answer["rolls"]]
    assert [roll["nonce"] for roll in answered] == list(range(len(rolled)))
    seat_account = {seat["seat"]: seat["account_id"] for seat in game["seats"]}
    for roll, event in zip(answered, rolled, strict=True):
        assert roll == {
            "nonce": event["nonce"],
            "seat": event["seat"],
            "account_id": seat_account[event["seat"]],
            "purpose": event["purpose"],
            "face": event["face"],
            "color": event["color"],
            "in_favor": event["in_favor"],
        }
    start = answers[0]
    assert [(roll["nonce"], roll["purpose"], roll["in_favor"]) for roll in start["rolls"]] == [
        (0, "favor", None)
    ]
    proof = api.proof(game["id"])
    assert [(roll["nonce"], roll["face"]) for roll in answered] == [
        (roll["nonce"], roll["face"]) for roll in proof["rolls"]
    ]
