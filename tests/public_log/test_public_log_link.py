"""A finished game's public link says where it is in its tenant's public log: pending until the sequencer
appends it, then its leaf and inclusion proof against a signed checkpoint carried in the answer, which
verifies offline with the published key alone. The signed proof beside it is unchanged."""

from __future__ import annotations

import base64
import json
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.public_log.sequencer import LogSigner
from pokna.runtime import Runtime
from pokna_verify.crypto.signing import public_key_from_b64url
from pokna_verify.tlog.checkpoint import parse_checkpoint
from pokna_verify.tlog.game_leaf import game_leaf_entry
from pokna_verify.tlog.hashing import leaf_hash
from pokna_verify.tlog.note import NoteVerifier, open_note
from pokna_verify.tlog.verify import verify_inclusion
from support.game_logs import ORIGIN_PREFIX, open_table, sequence_all
from support.game_play import Api


def _link_of(client: TestClient, api: Api, game_id: str) -> dict[str, Any]:
    game = api.ok(api.get(f"/v1/games/{game_id}"))
    response = client.get(game["fairness"]["public_url"])
    assert response.status_code == 200, response.text
    link: dict[str, Any] = response.json()
    return link


def test_a_finished_games_link_is_pending_then_carries_its_inclusion(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    table = open_table(client, sessions)
    signer = LogSigner(ORIGIN_PREFIX, runtime.keys.signing_key)
    table.finish_games(2)
    sequence_all(runtime.aio, signer)
    (game_id,) = table.finish_games(1)
    before = _link_of(client, table.api, game_id)
    assert before["public_log"] == {"status": "pending", "log_url": f"/v1/logs/{table.tenant_id}"}
    sequence_all(runtime.aio, signer)
    table.finish_games(1)
    sequence_all(runtime.aio, signer)

    link = _link_of(client, table.api, game_id)
    assert link["proof"] == before["proof"] == table.api.proof(game_id)  # the signed bytes are untouched
    place = link["public_log"]
    origin = f"{ORIGIN_PREFIX}/{table.tenant_id}"
    assert (place["status"], place["origin"], place["log_url"]) == (
        "logged",
        origin,
        f"/v1/logs/{table.tenant_id}",
    )
    assert (place["leaf_index"], place["game_number"], place["tree_size"]) == (2, 3, 4)
    # Offline: the published key, the proof and this member; nothing else asked of the log.
    (key,) = client.get("/v1/fairness/keys").json()["keys"]
    note = open_note(place["checkpoint"], [NoteVerifier(origin, public_key_from_b64url(key["public_key"]))])
    checkpoint = parse_checkpoint(note.text)
    assert checkpoint.size == place["tree_size"]
    entry = game_leaf_entry(link["proof"], status=link["status"], pot_account_id=_pot(place["entry"]))
    assert entry.decode() == place["entry"]
    path = [base64.b64decode(value) for value in place["inclusion_path"]]
    verify_inclusion(leaf_hash(entry), place["leaf_index"], checkpoint.size, path, checkpoint.root_hash)
    assert client.get(f"{place['log_url']}/checkpoints/{place['tree_size']}").text == place["checkpoint"]


def _pot(entry: str) -> str:
    pot: str = json.loads(entry)["pot_account_id"]
    return pot
