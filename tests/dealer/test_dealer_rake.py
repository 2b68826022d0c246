"""The rake over HTTP: the card's example with a 5% rake capped at 1 credit, every pot and balance, the
books, the proof (and a tampered rake refused); the terms' validation and the tenant's defaults.

The card plays in whole credits; a rake of 5% of a pot of 8 minor units rounds down to nothing, so here a
credit is 100 minor units: stake 100, cap 100 (1 credit). The rolls come out as on the card by choosing
the Vigo's client seed, as in test_dealer_card_example.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from pokna.cli.app import app as cli
from pokna.db.models.game import Game
from pokna.runtime import Runtime
from pokna_verify.fairness.seed_vault import open_server_seed
from support.card_example import PLAYER_SEEDS, act, vigo_seed_giving_card_rolls
from support.tenant_api import new_tenant

CREDIT = 100
START = 10 * CREDIT
RAKE = {"bps": 500, "cap": CREDIT}


def _verify(
    proof: dict[str, Any], tmp_path: Path, keys: dict[str, Any], receipt: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    proof_path, keys_path = tmp_path / "proof.json", tmp_path / "keys.json"
    receipt_path = tmp_path / "receipt.json"
    proof_path.write_text(json.dumps(proof))
    keys_path.write_text(json.dumps(keys))
    receipt_path.write_text(json.dumps(receipt))
    given = ["--keys", str(keys_path), "--receipt", str(receipt_path), "--json"]
    result = CliRunner().invoke(cli, ["verify", str(proof_path), *given])
    report: dict[str, Any] = json.loads(result.output)
    return result.exit_code, report


def test_the_cards_example_with_a_five_percent_rake(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, tmp_path: Path
) -> None:
    api = new_tenant(client, sessions)
    vigo, *players = accounts = [api.wallet(START, external_id=f"seat-{index}") for index in range(5)]
    p1, _, _, p4 = players

    def balances() -> list[int]:
        return [api.balance(account) for account in accounts]

    created = api.post(
        "/v1/games", {"vigo_account_id": vigo, "player_account_ids": players, "stake": CREDIT, "rake": RAKE}
    )
    assert created.status_code == 201, created.text
    game = created.json()
    game_id = game["id"]
    assert game["rake"] == RAKE
    assert game["rake_taken"] == 0
    # The terms are in the signed commitment, before anyone joins or rolls.
    assert (
        game["fairness"]["commitment"]["game"]["rake_bps"],
        game["fairness"]["commitment"]["game"]["rake_cap"],
    ) == (500, CREDIT)

    with sessions() as session:
        row = session.scalars(select(Game).where(Game.id == game_id)).one_or_none()
        assert row is not None
        server_seed = open_server_seed(row.sealed_server_seed, runtime.keys.seed_key, game_id)
    vigo_seed = vigo_seed_giving_card_rolls(server_seed)
    for account, seed in zip(accounts, [vigo_seed, *PLAYER_SEEDS], strict=True):
        act(api, game_id, {"type": "set_client_seed", "account_id": account, "client_seed": seed})

    game = act(api, game_id, {"type": "start", "account_id": vigo})
    assert (game["favor"], game["pot"]) == ("red", 400)
    assert balances() == [1000, 900, 900, 900, 900]
    for player in players:
        game = act(api, game_id, {"type": "roll", "account_id": player})
    assert game["pot"] == 600
    assert balances() == [800, 900, 900, 900, 900]
    game = act(api, game_id, {"type": "vote", "account_id": p1, "choice": "split"})
    game = act(api, game_id, {"type": "vote", "account_id": p4, "choice": "roll_again"})
    assert game["pot"] == 600
    game = act(api, game_id, {"type": "roll", "account_id": p1})
    game = act(api, game_id, {"type": "roll", "account_id": p4})
    assert (game["phase"], game["pot"]) == ("lone_survivor", 600)
    game = act(api, game_id, {"type": "challenge", "account_id": p1})
    assert game["pot"] == 800
    assert balances() == [700, 800, 900, 900, 900]
    assert game["rake_taken"] == 0  # nothing is raked before the pot is paid out
    game = act(api, game_id, {"type": "roll", "account_id": vigo})
    game = act(api, game_id, {"type": "roll", "account_id": p1})

    # The Vigo wins the pot of 8 credits; the house takes 5% of it (0.40 credit, under the 1-credit cap).
    assert (game["status"], game["pot"], game["rake_taken"]) == ("settled", 0, 40)
    assert game["outcome"]["payouts"] == [{"seat": 0, "account_id": vigo, "amount": 760}]
    assert balances() == [1460, 800, 900, 900, 900]
    assert sum(balances()) + 40 == 5 * START

    events = api.get(f"/v1/games/{game_id}/events", params={"limit": 100}).json()["data"]
    moves = [(e["data"]["kind"], e["data"]["payer"], e["data"]["payee"], e["data"]["amount"])
             for e in events if e["kind"] == "money_moved"]  # fmt: skip
    assert moves == [
        ("ante", 1, "pot", 100), ("ante", 2, "pot", 100), ("ante", 3, "pot", 100), ("ante", 4, "pot", 100),
        ("vigo_contribution", 0, "pot", 200),
        ("challenge_raise", 0, "pot", 100), ("challenge_match", 1, "pot", 100),
        ("rake", "pot", "revenue", 40), ("payout", "pot", 0, 760),
    ]  # fmt: skip
    raked = [e["data"] for e in events if e["kind"] == "raked"]
    assert raked == [{"kind": "raked", "amount": 40, "pot": 800, "rake_bps": 500, "rake_cap": CREDIT}]

    # The books: the rake is the tenant's revenue, and the trial balance still sums to zero.
    trial = api.get("/v1/ledger/trial-balance").json()
    by_kind: dict[str, int] = {}
    for line in trial["accounts"]:
        by_kind[line["kind"]] = by_kind.get(line["kind"], 0) + line["balance"]
    assert by_kind["revenue"] == 40
    assert by_kind["game_pot"] == 0
    assert sum(line["balance"] for line in trial["accounts"]) == 0

    # The proof verifies, rake and all; a proof with another rake does not.
    proof = api.get(f"/v1/games/{game_id}/proof").json()
    assert (proof["game"]["rake_bps"], proof["game"]["rake_cap"]) == (500, CREDIT)
    keys = client.get("/v1/fairness/keys").json()
    status, report = _verify(proof, tmp_path, keys, game["fairness"]["commitment"])
    assert status == 0, report
    assert report["valid"] is True
    assert {check["name"]: check["status"] for check in report["checks"]}["replay"] == "pass"

    skimmed = json.loads(json.dumps(proof))
    skimmed["transfers"][-2]["amount"] = 41  # the operator takes one more unit...
    skimmed["transfers"][-1]["amount"] = 759  # ...and pays the Vigo one less: the pot still balances
    status, report = _verify(skimmed, tmp_path, keys, game["fairness"]["commitment"])
    assert status == 1
    assert report["valid"] is False
    failed = {check["name"] for check in report["checks"] if check["status"] == "fail"}
    assert "replay" in failed

    hidden = json.loads(json.dumps(proof))
    hidden["game"]["rake_bps"] = 400  # claiming a smaller rate than the one the players agreed to
    status, report = _verify(hidden, tmp_path, keys, game["fairness"]["commitment"])
    assert status == 1
    assert report["valid"] is False


def test_bad_rake_terms_are_422_naming_the_field(client: TestClient, sessions: sessionmaker[Session]) -> None:
    api = new_tenant(client, sessions)
    vigo, player = api.wallet(10), api.wallet(10)
    base = {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 1}
    for rake, field in (
        ({"bps": 10_001}, "bps"),
        ({"bps": -1}, "bps"),
        ({"bps": 500, "cap": -1}, "cap"),
        ({"bps": "500"}, "bps"),
        ({"bps": 500, "rate": 1}, "rate"),
    ):
        for path, body in (("/v1/games", base), ("/v1/tables", {"account_ids": [vigo, player], "stake": 1})):
            response = api.post(path, {**body, "rake": rake})
            assert response.status_code == 422, response.text
            assert response.headers["content-type"].startswith("application/problem+json")
            names = [param["name"] for param in response.json()["invalid_params"]]
            assert any(name.endswith(f"rake.{field}") for name in names), names
        response = api.client.put("/v1/tenant/settings", json={"rake": rake}, headers=api.headers)
        assert response.status_code == 422, response.text
    # At the edges: all of the pot, and a cap of zero (no rake at all), are allowed.
    for rake in ({"bps": 10_000}, {"bps": 0}, {"bps": 500, "cap": 0}):
        assert api.post("/v1/games", {**base, "rake": rake}).status_code == 201


def test_the_tenants_default_rake_applies_to_new_games_and_tables_only(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = new_tenant(client, sessions)
    other = new_tenant(client, sessions, name="Other")
    vigo, player = api.wallet(1000), api.wallet(1000)
    base = {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 100}
    before = api.post("/v1/games", base).json()
    assert before["rake"] == {"bps": 0, "cap": None}
    assert "rake_bps" not in before["fairness"]["commitment"]["game"]  # no rake: the receipt is as it was

    settings = api.client.put(
        "/v1/tenant/settings", json={"rake": {"bps": 250, "cap": 3}}, headers=api.headers
    )
    assert settings.status_code == 200, settings.text
    assert settings.json() == {
        "object": "tenant_settings",
        "tenant_id": api.tenant_id,
        "rake": {"bps": 250, "cap": 3},
        "fairness_mode": "stake",  # unchanged by a PUT that names only the rake
    }
    assert api.get("/v1/tenant/settings").json()["rake"] == {"bps": 250, "cap": 3}
    assert other.get("/v1/tenant/settings").json()["rake"] == {"bps": 0, "cap": None}

    after = api.post("/v1/games", base).json()
    assert after["rake"] == {"bps": 250, "cap": 3}
    assert (
        after["fairness"]["commitment"]["game"]["rake_bps"],
        after["fairness"]["commitment"]["game"]["rake_cap"],
    ) == (250, 3)
    assert api.get(f"/v1/games/{before['id']}").json()["rake"] == {"bps": 0, "cap": None}
    named = api.post("/v1/games", {**base, "rake": {"bps": 0}}).json()
    assert named["rake"] == {"bps": 0, "cap": None}

    table = api.post("/v1/tables", {"account_ids": [vigo, player], "stake": 100}).json()
    assert table["rake"] == {"bps": 250, "cap": 3}
    api.client.put("/v1/tenant/settings", json={"rake": {"bps": 0}}, headers=api.headers)
    round_one = api.post(f"/v1/tables/{table['id']}/rounds").json()
    assert round_one["rake"] == {"bps": 250, "cap": 3}  # the table's terms, fixed when it was created
