"""The public log's read API, without an API key, checked as a player's or witness's tools would: the
checkpoint opened as a signed note under the published key, each inclusion path verified by RFC 9162's
steps and equal to pymerkle's, consistency joining two served checkpoints; bad sizes and unknown games
answer problem+json naming the parameter."""

from __future__ import annotations

import base64
import json

import pytest
from fastapi.testclient import TestClient
from pymerkle import InmemoryTree
from sqlalchemy.orm import Session, sessionmaker

from pokna.public_log.sequencer import LogSigner
from pokna.runtime import Runtime
from pokna_verify.crypto.signing import public_key_from_b64url
from pokna_verify.tlog.checkpoint import Checkpoint, parse_checkpoint
from pokna_verify.tlog.game_leaf import game_leaf_entry
from pokna_verify.tlog.hashing import leaf_hash
from pokna_verify.tlog.note import NoteVerifier, open_note
from pokna_verify.tlog.verify import verify_consistency, verify_inclusion
from support.api_checks import assert_problem, invalid_params
from support.game_logs import ORIGIN_PREFIX, Table, open_table, sequence_all


def b64(values: list[str]) -> list[bytes]:
    return [base64.b64decode(value) for value in values]


def published_checkpoint(client: TestClient, table: Table, path: str = "checkpoint") -> Checkpoint:
    """What a player's tool does: fetch the note without a key and open it with the published key."""
    response = client.get(f"/v1/logs/{table.tenant_id}/{path}")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    (key,) = client.get("/v1/fairness/keys").json()["keys"]
    verifier = NoteVerifier(f"{ORIGIN_PREFIX}/{table.tenant_id}", public_key_from_b64url(key["public_key"]))
    return parse_checkpoint(open_note(response.text, [verifier]).text)


@pytest.fixture
def logged(client: TestClient, sessions: sessionmaker[Session], runtime: Runtime) -> tuple[Table, list[str]]:
    table = open_table(client, sessions)
    signer = LogSigner(ORIGIN_PREFIX, runtime.keys.signing_key)
    games = table.finish_games(4, cancel_every=2)
    sequence_all(runtime.aio, signer)
    games += table.finish_games(3)
    sequence_all(runtime.aio, signer)
    return table, games


def test_checkpoints_are_served_signed_and_old_ones_stay(
    client: TestClient, logged: tuple[Table, list[str]]
) -> None:
    table, _ = logged
    latest = published_checkpoint(client, table)
    assert latest.size == 7
    assert published_checkpoint(client, table, "checkpoints/7") == latest
    assert published_checkpoint(client, table, "checkpoints/4").size == 4
    assert "immutable" in client.get(f"/v1/logs/{table.tenant_id}/checkpoints/4").headers["cache-control"]


def test_every_game_proves_its_inclusion_in_every_checkpoint_holding_it(
    client: TestClient, logged: tuple[Table, list[str]]
) -> None:
    table, games = logged
    checkpoints = {size: published_checkpoint(client, table, f"checkpoints/{size}") for size in (4, 7)}
    theirs = InmemoryTree(algorithm="sha256")
    for number, game_id in enumerate(games):
        proof = table.api.proof(game_id)
        game = table.api.game(game_id)
        for size in (4, 7) if number < 4 else (7,):
            answer = client.get(
                f"/v1/logs/{table.tenant_id}/games/{game_id}/inclusion", params={"tree_size": size}
            )
            assert answer.status_code == 200, answer.text
            body = answer.json()
            entry = json.loads(body["entry"])
            assert (entry["game_id"], entry["status"]) == (game_id, game["status"])
            assert body["entry"].encode() == game_leaf_entry(
                proof, status=game["status"], pot_account_id=entry["pot_account_id"]
            )
            assert base64.b64decode(body["root_hash"]) == checkpoints[size].root_hash
            verify_inclusion(
                leaf_hash(body["entry"].encode()),
                body["leaf_index"],
                size,
                b64(body["inclusion_path"]),
                checkpoints[size].root_hash,
            )
        theirs.append_entry(body["entry"].encode())
    for game_id in games:
        body = client.get(f"/v1/logs/{table.tenant_id}/games/{game_id}/inclusion").json()
        assert body["tree_size"] == 7
        expected = theirs.prove_inclusion(body["leaf_index"] + 1, 7).path[1:]
        assert b64(body["inclusion_path"]) == expected


def test_consistency_joins_the_served_checkpoints(
    client: TestClient, logged: tuple[Table, list[str]]
) -> None:
    table, _ = logged
    old, new = (published_checkpoint(client, table, f"checkpoints/{size}") for size in (4, 7))
    answer = client.get(f"/v1/logs/{table.tenant_id}/consistency", params={"first": 4, "second": 7})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    verify_consistency(4, 7, old.root_hash, new.root_hash, b64(body["consistency_path"]))
    same = client.get(f"/v1/logs/{table.tenant_id}/consistency", params={"first": 7, "second": 7}).json()
    assert same["consistency_path"] == []


def test_bad_sizes_and_unknown_games_are_problems_naming_what_is_wrong(
    client: TestClient, sessions: sessionmaker[Session], logged: tuple[Table, list[str]]
) -> None:
    table, games = logged
    base = f"/v1/logs/{table.tenant_id}"
    # A tree the log has not grown to is not there yet (404, like a checkpoint never signed): a size a
    # request may give is any the schema allows, never a malformed one.
    too_big = assert_problem(client.get(f"{base}/games/{games[0]}/inclusion", params={"tree_size": 8}), 404)
    assert "no tree of 8" in too_big["detail"]
    before_it = assert_problem(client.get(f"{base}/games/{games[5]}/inclusion", params={"tree_size": 4}), 404)
    assert "leaf 5" in before_it["detail"]
    assert_problem(client.get(f"{base}/games/{games[0]}/inclusion", params={"tree_size": 0}), 422)
    assert_problem(client.get(f"{base}/games/game_nonesuch/inclusion"), 404, "not_found")
    waiting = table.finish_games(1)[0]
    assert_problem(client.get(f"{base}/games/{waiting}/inclusion"), 404, "not_found")
    backwards = assert_problem(client.get(f"{base}/consistency", params={"first": 7, "second": 4}), 422)
    assert invalid_params(backwards) == {"query.first": "/first"}
    beyond = assert_problem(client.get(f"{base}/consistency", params={"first": 4, "second": 9}), 404)
    assert "no tree of 9" in beyond["detail"]
    assert_problem(client.get(f"{base}/consistency", params={"first": 1, "second": 2**63}), 422)
    assert_problem(client.get(f"{base}/consistency", params={"first": 0, "second": 4}), 422)
    assert_problem(client.get(f"{base}/checkpoints/5"), 404, "not_found")
    other = open_table(client, sessions, "Anchorhead")
    assert_problem(client.get(f"/v1/logs/{other.tenant_id}/checkpoint"), 404, "not_found")
    assert_problem(client.get(f"/v1/logs/{other.tenant_id}/games/{games[0]}/inclusion"), 404, "not_found")


def test_a_nul_in_a_tenant_or_game_id_is_a_problem_naming_it(client: TestClient) -> None:
    """PostgreSQL text cannot hold U+0000: such an id is bad input (422 naming it), never a 500."""
    for path in ("checkpoint", "checkpoints/3", "consistency?first=1&second=2"):
        problem = assert_problem(client.get(f"/v1/logs/tnt_a%00b/{path}"), 422)
        assert set(invalid_params(problem)) == {"path.tenant_id"}, path
    problem = assert_problem(client.get("/v1/logs/tnt_a/games/game_a%00b/inclusion"), 422)
    assert set(invalid_params(problem)) == {"path.game_id"}
