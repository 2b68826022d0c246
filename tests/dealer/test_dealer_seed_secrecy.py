"""Unrevealed server seeds are secrets: a full database dump taken mid-game holds no trace of one."""

from __future__ import annotations

import subprocess

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.game import Game
from pokna.runtime import Runtime
from pokna_verify.fairness.seed_vault import open_server_seed
from support.postgres import find_bindir
from support.tenant_api import new_tenant


def _full_dump(database_url: str) -> str:
    url = make_url(database_url)
    command = [
        str(find_bindir() / "pg_dump"),
        "--host", str(url.host), "--port", str(url.port), "--username", str(url.username),
        "--no-password", str(url.database),
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def test_a_dump_taken_mid_game_holds_no_server_seed(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, database_url: str
) -> None:
    api = new_tenant(client, sessions)
    vigo, player = api.wallet(50), api.wallet(50)
    game = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": [player], "stake": 5}).json()
    started = api.post(f"/v1/games/{game['id']}/actions", {"type": "start", "account_id": vigo})
    assert started.status_code == 200, started.text
    assert started.json()["status"] == "in_progress"
    with sessions() as session:
        row = session.scalars(select(Game).where(Game.id == game["id"])).one_or_none()
        assert row is not None
        server_seed = open_server_seed(row.sealed_server_seed, runtime.keys.seed_key, game["id"])

    dump = _full_dump(database_url)
    assert game["fairness"]["server_seed_hash"] in dump  # the dump is real and holds the commitment...
    assert server_seed not in dump  # ...but not the seed, in any case
    assert server_seed.upper() not in dump
    assert bytes.fromhex(server_seed).hex() not in dump.lower()

    # Once the game is over the seed is revealed, so the same dump then does contain it.
    while (current := api.get(f"/v1/games/{game['id']}").json())["status"] == "in_progress":
        turn = current["turn"]
        action = "claim" if "claim" in turn["allowed_actions"] else "roll"
        api.post(f"/v1/games/{game['id']}/actions", {"type": action, "account_id": turn["account_ids"][0]})
    assert server_seed in _full_dump(database_url)
