"""The rules card's example of play, over HTTP, checking every pot and balance, then `pokna verify`.

The rolls are made to come out as on the card by choosing the Vigo's client seed: the test plays the
operator and reads the sealed server seed, which no client can do (that is the point of the commitment).
"""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from pokna.cli.app import app as cli
from pokna.db.models.game import Game
from pokna.runtime import Runtime
from pokna_verify.fairness.seed_vault import open_server_seed
from support.card_example import CARD_ROLLS, PLAYER_SEEDS, act, vigo_seed_giving_card_rolls
from support.tenant_api import new_tenant

# CARD_ROLLS in nonce order: the Vigo's favor, the first pass (players 1-4), the re-roll (players 1 and 4),
# then the challenge: the Vigo's new favor and player 1's roll. The card: "Player 1 rolls blue -
# eliminated", so the Vigo's new favor was red.
START = 10


def test_the_cards_example_of_play(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, tmp_path: Path
) -> None:
    api = new_tenant(client, sessions)
    vigo, *players = accounts = [api.wallet(START, external_id=f"seat-{index}") for index in range(5)]
    p1, p2, p3, p4 = players

    def balances() -> list[int]:
        return [api.balance(account) for account in accounts]

    table = api.post("/v1/tables", {"account_ids": accounts, "stake": 1})
    assert table.status_code == 201, table.text
    created = api.post(f"/v1/tables/{table.json()['id']}/rounds")
    assert created.status_code == 201, created.text
    game = created.json()
    receipt = game["fairness"]["commitment"]  # the player's receipt, kept from the start
    game_id = game["id"]
    assert [seat["account_id"] for seat in game["seats"]] == accounts
    assert game["challenge_raise"] == 1  # the card: "The Vigo adds another 1 credit"

    with sessions() as session:
        row = session.scalars(select(Game).where(Game.id == game_id)).one_or_none()
        assert row is not None
        server_seed = open_server_seed(row.sealed_server_seed, runtime.keys.seed_key, game_id)
    vigo_seed = vigo_seed_giving_card_rolls(server_seed)
    for account, seed in zip(accounts, [vigo_seed, *PLAYER_SEEDS], strict=True):
        act(api, game_id, {"type": "set_client_seed", "account_id": account, "client_seed": seed})

    # The Vigo sets the stake at 1 credit and rolls red. Each player antes 1 credit, for a pot of 4.
    game = act(api, game_id, {"type": "start", "account_id": vigo})
    assert (game["favor"], game["pot"]) == ("red", 4)
    assert balances() == [10, 9, 9, 9, 9]

    # Player 1 rolls red, 2 and 3 roll blue, 4 rolls red.
    for player in players:
        game = act(api, game_id, {"type": "roll", "account_id": player})
    statuses = [seat["status"] for seat in game["seats"][1:]]
    assert statuses == ["in_favor", "eliminated", "eliminated", "in_favor"]
    # Two remain in favor. The Vigo pays 2 credits into the pot, raising the total to 6.
    assert game["pot"] == 6
    assert balances() == [8, 9, 9, 9, 9]
    assert game["phase"] == "voting"

    # Player 1 offers to split, but Player 4 refuses. They roll again.
    game = act(api, game_id, {"type": "vote", "account_id": p1, "choice": "split"})
    assert game["phase"] == "voting"
    game = act(api, game_id, {"type": "vote", "account_id": p4, "choice": "roll_again"})
    assert game["phase"] == "seeking"
    assert game["pot"] == 6  # no second contribution before the re-roll: the Vigo pays once per pass

    # Player 1 rolls red - still in favor; Player 4 rolls blue - eliminated.
    game = act(api, game_id, {"type": "roll", "account_id": p1})
    game = act(api, game_id, {"type": "roll", "account_id": p4})
    assert game["phase"] == "lone_survivor"
    assert game["turn"]["account_ids"] == [p1]
    assert set(game["turn"]["allowed_actions"]) == {"claim", "challenge"}

    # Player 1 challenges. The Vigo adds 1 credit and the player matches, bringing the total to 8.
    game = act(api, game_id, {"type": "challenge", "account_id": p1})
    assert game["pot"] == 8
    assert balances() == [7, 8, 9, 9, 9]

    # The Vigo rolls again (red), then Player 1 rolls blue - eliminated. The Vigo wins the pot of 8.
    game = act(api, game_id, {"type": "roll", "account_id": vigo})
    game = act(api, game_id, {"type": "roll", "account_id": p1})
    assert game["status"] == "settled"
    assert game["pot"] == 0
    assert game["outcome"]["reason"] == "challenge_lost"
    assert game["outcome"]["payouts"] == [{"seat": 0, "account_id": vigo, "amount": 8}]
    assert balances() == [15, 8, 9, 9, 9]
    assert sum(balances()) == 5 * START

    # Every money movement, in order, as the ledger posted it.
    events = api.get(f"/v1/games/{game_id}/events", params={"limit": 100}).json()["data"]
    moves = [(e["data"]["kind"], e["data"]["payer"], e["data"]["payee"], e["data"]["amount"])
             for e in events if e["kind"] == "money_moved"]  # fmt: skip
    assert moves == [
        ("ante", 1, "pot", 1), ("ante", 2, "pot", 1), ("ante", 3, "pot", 1), ("ante", 4, "pot", 1),
        ("vigo_contribution", 0, "pot", 2),
        ("challenge_raise", 0, "pot", 1), ("challenge_match", 1, "pot", 1),
        ("payout", "pot", 0, 8),
    ]  # fmt: skip
    rolls = [e["data"] for e in events if e["kind"] == "rolled"]
    assert [r["nonce"] for r in rolls] == list(range(len(CARD_ROLLS)))
    assert [r["color"] for r in rolls] == CARD_ROLLS

    # The title of Vigo passes to Player 1 for the next round.
    next_round = api.post(f"/v1/tables/{table.json()['id']}/rounds")
    assert next_round.status_code == 201, next_round.text
    assert next_round.json()["seats"][0]["account_id"] == p1
    assert [seat["account_id"] for seat in next_round.json()["seats"]] == [p1, p2, p3, p4, vigo]
    totals = {
        line["account_id"]: line["net"]
        for line in api.get(f"/v1/tables/{table.json()['id']}").json()["totals"]
    }
    assert totals == {vigo: 5, p1: -2, p2: -1, p3: -1, p4: -1}

    # Anyone can check the proof offline with the published keys.
    proof_path = tmp_path / "proof.json"
    keys_path = tmp_path / "keys.json"
    proof = api.get(f"/v1/games/{game_id}/proof").json()
    assert proof["server_seed"] == server_seed
    proof_path.write_text(json.dumps(proof))
    keys_path.write_text(json.dumps(client.get("/v1/fairness/keys").json()))
    receipt_path = tmp_path / "receipt.json"
    receipt_path.write_text(json.dumps(receipt))
    checked = ["--keys", str(keys_path), "--receipt", str(receipt_path), "--json"]
    verified = CliRunner().invoke(cli, ["verify", str(proof_path), *checked])
    assert verified.exit_code == 0, verified.output
    report = json.loads(verified.output)
    assert report["valid"] is True
    assert {check["name"]: check["status"] for check in report["checks"]}["replay"] == "pass"

    proof["transfers"][-1]["amount"] = 9  # the operator pays itself one more credit...
    proof_path.write_text(json.dumps(proof))
    tampered = CliRunner().invoke(cli, ["verify", str(proof_path), *checked])
    assert tampered.exit_code == 1
