"""Beacon-mode games over HTTP, against a drand relay on 127.0.0.1 (support.beacon_server) that signs with a
test key of quicknet's scheme, one round a second.

What a player of such a game relies on: every drawing action is accepted (and signed) before the round its
rolls use exists; the proof verifies offline, `pokna verify` included, with each roll's round checked against
the chain's key; a tampered round fails naming the roll; a beacon that stops publishing leaves the roll
pending (202) and nothing else happens in the game, no money leaves its wallets, until the round arrives;
and a player who holds the server seed before the start cannot predict the first roll, as they can in the
default mode.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from pokna.api import metrics, metrics_backlog
from pokna.cli.app import app as cli
from pokna.db.models.game import Game as GameRow
from pokna.db.models.ledger import Account
from pokna.db.models.webhook import WebhookEvent
from pokna.db.types import utc_now
from pokna.dealer.action.locked import Clock
from pokna.runtime import Runtime
from pokna.settings import Settings
from pokna_verify.crypto.signing import signature_problem
from pokna_verify.fairness.beacon import BeaconChain, beacon_roll, first_round_after_ms, parse_timestamp_ms
from pokna_verify.fairness.beacon_acceptance import acceptance_problems
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.fairness.proof_replay import replay_proof
from pokna_verify.fairness.protocol import game_client_seed, roll
from pokna_verify.fairness.seed_vault import open_server_seed
from pokna_verify.fairness.verification import VerificationReport, verify_proof
from support.beacon_game import beacon_settings, chain_file_of
from support.beacon_server import BeaconRelay, beacon_relay
from support.detours import watched
from support.scrapes import scrape, value
from support.sweeping import swept
from support.tenant_api import TenantApi, new_tenant

START = 1_000


@pytest.fixture
def relay() -> Iterator[BeaconRelay]:
    with beacon_relay(period=1, rounds_before_now=5, lifetime_seconds=240) as running:
        yield running


@pytest.fixture
def chain_file(tmp_path: Path, relay: BeaconRelay) -> Path:
    return chain_file_of(tmp_path, relay)


@pytest.fixture(name="settings")
def settings_for_the_relay(
    tmp_path: Path, database_url: str, relay: BeaconRelay, chain_file: Path
) -> Settings:
    return beacon_settings(tmp_path, database_url, relay, chain_file)


def _game(api: TenantApi, mode: str | None = "beacon", players: int = 2) -> dict[str, Any]:
    vigo, *seated = [api.wallet(START) for _ in range(players + 1)]
    terms: dict[str, Any] = {"vigo_account_id": vigo, "player_account_ids": seated, "stake": 10}
    if mode is not None:
        terms["fairness_mode"] = mode
    created = api.post("/v1/games", terms)
    assert created.status_code == 201, created.text
    game: dict[str, Any] = created.json()
    return game


def _next(game: dict[str, Any]) -> dict[str, Any]:
    turn = game["turn"]
    account, allowed = turn["account_ids"][0], turn["allowed_actions"]
    if "start" in allowed:
        return {"type": "start", "account_id": account}
    if "vote" in allowed:
        return {"type": "vote", "account_id": account, "choice": "split"}
    if "claim" in allowed:
        return {"type": "claim", "account_id": account}
    return {"type": "roll", "account_id": account}


def _verify(
    proof: dict[str, Any], api: TenantApi, receipt: dict[str, Any], chain: BeaconChain
) -> VerificationReport:
    keys = KeyRing.from_json(api.get("/v1/fairness/keys").json())
    return verify_proof(proof, keys, replay=replay_proof, receipt=receipt, beacon_chains=(chain,))


def _play_to_the_end(api: TenantApi, relay: BeaconRelay, game: dict[str, Any]) -> dict[str, Any]:
    """Every drawing action is answered once its round is in, each roll naming the round the acceptance named,
    which the relay had not published when the request was sent."""
    for _ in range(60):
        if game["status"] in ("settled", "cancelled"):
            return game
        latest_before = relay.latest_round()
        answer = api.post(f"/v1/games/{game['id']}/actions", _next(game))
        assert answer.status_code == 200, answer.text
        game = answer.json()
        assert game["fairness"]["pending_roll"] is None
        if game["rolls"]:
            accepted = [event for event in _events(api, game["id"]) if event["kind"] == "roll_accepted"][-1]
            assert accepted["data"]["beacon_round"] > latest_before
    raise AssertionError(f"game {game['id']} did not end: {game}")


def _announced(sessions: sessionmaker[Session], game_id: str) -> list[str]:
    """The webhook events recorded for the game, in order (the outbox the dispatcher delivers from)."""
    with sessions() as session:
        return list(
            session.scalars(
                select(WebhookEvent.type)
                .where(WebhookEvent.ordering_key == game_id)
                .order_by(WebhookEvent.seq)
            )
        )


def _events(api: TenantApi, game_id: str) -> list[dict[str, Any]]:
    page = api.get(f"/v1/games/{game_id}/events", params={"limit": 100}).json()
    assert not page["has_more"]
    events: list[dict[str, Any]] = page["data"]
    return events


@pytest.mark.citus
def test_a_beacon_game_played_over_http_verifies_with_every_round_checked(
    client: TestClient, sessions: sessionmaker[Session], relay: BeaconRelay, chain_file: Path, tmp_path: Path
) -> None:
    api = new_tenant(client, sessions)
    game = _game(api, players=3)
    receipt = game["fairness"]["commitment"]
    assert game["fairness"]["mode"] == "beacon"
    assert receipt["fairness_mode"] == "beacon"
    assert receipt["beacon_chain"] == relay.chain.to_json()

    game = _play_to_the_end(api, relay, game)
    assert game["pot"] == 0
    proof = api.get(f"/v1/games/{game['id']}/proof").json()
    assert proof["protocol"] == "pokna-hmac-sha256-drand-v1"
    assert proof["fairness_mode"] == "beacon"
    assert [entry["nonce"] for entry in proof["rolls"]] == list(range(game["fairness"]["next_nonce"]))
    for entry in proof["rolls"]:
        published = relay.key.sign(entry["beacon"]["round"])
        assert entry["beacon"] == published.to_json()  # the round as the beacon published it
        accepted_ms = parse_timestamp_ms(entry["accepted_at"])
        assert entry["beacon"]["round"] == first_round_after_ms(relay.chain, accepted_ms)

    report = _verify(proof, api, receipt, relay.chain)
    assert report.valid, report.to_json()
    assert report.check("beacon").status.value == "pass"
    # Without trusting the test chain a verifier refuses it: its key's holder chooses its rounds.
    keys = KeyRing.from_json(api.get("/v1/fairness/keys").json())
    untrusted = verify_proof(proof, keys, replay=replay_proof, receipt=receipt)
    assert not untrusted.valid
    assert "not a public beacon" in untrusted.check("beacon").message

    # `pokna verify`, offline, from files: the test chain trusted with --beacon-chain.
    proof_path, keys_path, receipt_path = (tmp_path / name for name in ("p.json", "k.json", "r.json"))
    proof_path.write_text(json.dumps(proof))
    keys_path.write_text(json.dumps(api.get("/v1/fairness/keys").json()))
    receipt_path.write_text(json.dumps(receipt))
    given = ["--keys", str(keys_path), "--receipt", str(receipt_path), "--beacon-chain", str(chain_file)]
    result = CliRunner().invoke(cli, ["verify", str(proof_path), *given, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["valid"] is True


@pytest.mark.parametrize("tamper", ["another_round", "randomness", "signature", "before_acceptance"])
def test_a_tampered_round_fails_naming_the_roll(
    client: TestClient, sessions: sessionmaker[Session], relay: BeaconRelay, tamper: str
) -> None:
    api = new_tenant(client, sessions)
    game = _play_to_the_end(api, relay, _game(api))
    proof = api.get(f"/v1/games/{game['id']}/proof").json()
    forged = copy.deepcopy(proof)
    target = forged["rolls"][-1]
    named = target["beacon"]["round"]
    if tamper == "another_round":  # a real round of the chain, just not the one named after the acceptance
        target["beacon"] = relay.key.sign(named - 1).to_json()
    elif tamper == "randomness":
        target["beacon"]["randomness"] = relay.key.sign(named + 1).randomness
    elif tamper == "signature":
        target["beacon"]["signature"] = relay.key.sign(named + 1).signature
    else:  # the round kept, the acceptance moved after it: the roll would have been known
        target["accepted_at"] = "2099-01-01T00:00:00.000Z"
    report = _verify(forged, api, game["fairness"]["commitment"], relay.chain)
    assert not report.valid
    beacon = report.check("beacon")
    assert beacon.status.value == "fail"
    assert f"roll nonce {target['nonce']}" in beacon.message, beacon.message


def test_a_beacon_that_stops_publishing_leaves_the_roll_pending_and_the_wallets_held(
    client: TestClient,
    sessions: sessionmaker[Session],
    relay: BeaconRelay,
    runtime: Runtime,
) -> None:
    api = new_tenant(client, sessions)
    game = _game(api)
    vigo = game["seats"][0]["account_id"]
    relay.stop_publishing()
    latest = relay.latest_round()

    accepted = api.post(
        f"/v1/games/{game['id']}/actions",
        {"type": "start", "account_id": vigo},
        headers={"Idempotency-Key": "s1"},
    )
    assert accepted.status_code == 202, accepted.text
    pending = accepted.json()["fairness"]["pending_roll"]
    assert pending["beacon_round"] > latest
    assert accepted.json()["rolls"] == []
    assert accepted.json()["turn"]["allowed_actions"] == []
    keys = KeyRing.from_json(api.get("/v1/fairness/keys").json())
    signer = keys.get(pending["acceptance"]["key_id"])
    assert signature_problem(pending["acceptance"], signer) is None  # signed like a proof
    assert acceptance_problems(pending["acceptance"], relay.chain, latest) == []
    # The client seeds were fixed at the acceptance, before the round: a late seed is refused.
    assert accepted.json()["fairness"]["client_seed"] is not None

    again = api.post(f"/v1/games/{game['id']}/actions", {"type": "cancel"})
    assert again.status_code == 409, again.text
    assert again.json()["code"] == "roll_pending"
    seed = api.post(
        f"/v1/games/{game['id']}/actions",
        {"type": "set_client_seed", "account_id": vigo, "client_seed": "late"},
    )
    assert seed.status_code == 409, seed.text
    assert seed.json()["code"] == "roll_pending"
    # No money leaves a seated wallet while its roll waits: a holder of the seed could void the roll.
    withdrawal = api.withdraw(vigo, 1)
    assert withdrawal.status_code == 409, withdrawal.text
    assert withdrawal.json()["code"] == "wallet_held"
    assert api.deposit(vigo, 5).status_code == 201  # money in is harmless
    assert api.balance(vigo) == START + 5
    replay = api.post(
        f"/v1/games/{game['id']}/actions",
        {"type": "start", "account_id": vigo},
        headers={"Idempotency-Key": "s1"},
    )
    assert replay.status_code == 202
    assert replay.json() == accepted.json()

    assert _announced(sessions, game["id"]).count("game.started") == 0  # accepted, not started

    # The sweep resolves it once the round is served (past the request's own wait).
    relay.resume_publishing()
    clock = Clock(now=utc_now() + timedelta(seconds=30), open_game_ttl=timedelta(hours=1))
    report = swept(runtime, clock, beacon=runtime.beacon)
    assert report.rolls_resolved == 1
    assert report.timeouts == 0
    resolved = api.get(f"/v1/games/{game['id']}").json()
    assert resolved["fairness"]["pending_roll"] is None
    assert resolved["status"] == "in_progress"
    assert resolved["fairness"]["next_nonce"] == 1  # the favor roll, drawn with the named round
    # The key that was answered 202 now replays the sweep's resolution (issue 37, item 3).
    retried = api.post(
        f"/v1/games/{game['id']}/actions",
        {"type": "start", "account_id": vigo},
        headers={"Idempotency-Key": "s1"},
    )
    assert retried.status_code == 200, retried.text
    assert retried.headers.get("Idempotent-Replayed") == "true"
    assert [entry["nonce"] for entry in retried.json()["rolls"]] == [0]
    assert retried.json()["version"] == resolved["version"]
    assert api.withdraw(vigo, 1).status_code == 201  # the hold is gone
    assert _announced(sessions, game["id"]).count("game.started") == 1  # the webhook that it resolved

    game = _play_to_the_end(api, relay, resolved)
    proof = api.get(f"/v1/games/{game['id']}/proof").json()
    assert proof["rolls"][0]["beacon"]["round"] == pending["beacon_round"]
    assert proof["rolls"][0]["accepted_at"] == pending["accepted_at"]
    report_valid = _verify(proof, api, game["fairness"]["commitment"], relay.chain)
    assert report_valid.valid, report_valid.to_json()


def test_the_next_action_resolves_a_roll_whose_round_came_in(
    client: TestClient, sessions: sessionmaker[Session], relay: BeaconRelay
) -> None:
    api = new_tenant(client, sessions)
    game = _game(api)
    vigo = game["seats"][0]["account_id"]
    relay.stop_publishing()
    accepted = api.post(f"/v1/games/{game['id']}/actions", {"type": "start", "account_id": vigo})
    assert accepted.status_code == 202, accepted.text
    relay.resume_publishing()
    player = accepted.json()["seats"][1]["account_id"]
    rolled = api.post(f"/v1/games/{game['id']}/actions", {"type": "roll", "account_id": player})
    assert rolled.status_code == 200, rolled.text
    assert [entry["nonce"] for entry in rolled.json()["rolls"]] == [1]  # the start's favor roll came first
    nonces = [event["data"]["nonce"] for event in _events(api, game["id"]) if event["kind"] == "rolled"]
    assert nonces == [0, 1]


def test_a_key_answered_202_replays_the_resolution_another_request_made(
    client: TestClient, sessions: sessionmaker[Session], relay: BeaconRelay
) -> None:
    """Issue 37, item 3: when another request resolved the roll a keyed action was accepted for, the key's
    stored answer stayed the 202, and a client retrying its key never saw the result. Whoever resolves a
    roll stores the resolution under the key that accepted it."""
    api = new_tenant(client, sessions)
    game = _game(api)
    vigo = game["seats"][0]["account_id"]
    start = {"type": "start", "account_id": vigo}
    relay.stop_publishing()
    accepted = api.post(f"/v1/games/{game['id']}/actions", start, headers={"Idempotency-Key": "start-a"})
    assert accepted.status_code == 202, accepted.text
    assert "answer_key" not in json.dumps(accepted.json())  # the key is never shown
    relay.resume_publishing()
    player = accepted.json()["seats"][1]["account_id"]
    rolled = api.post(
        f"/v1/games/{game['id']}/actions",
        {"type": "roll", "account_id": player},
        headers={"Idempotency-Key": "roll-b"},
    )
    assert rolled.status_code == 200, rolled.text
    assert [entry["nonce"] for entry in rolled.json()["rolls"]] == [1]
    retried = api.post(f"/v1/games/{game['id']}/actions", start, headers={"Idempotency-Key": "start-a"})
    assert retried.status_code == 200, retried.text
    assert retried.headers.get("Idempotent-Replayed") == "true"
    assert [entry["nonce"] for entry in retried.json()["rolls"]] == [0]  # its own roll, not the other's
    assert retried.json()["fairness"]["pending_roll"] is None
    assert retried.json()["version"] < rolled.json()["version"]  # the answer as the resolution left it
    again = api.post(
        f"/v1/games/{game['id']}/actions",
        {"type": "roll", "account_id": player},
        headers={"Idempotency-Key": "roll-b"},
    )
    assert again.content == rolled.content  # the resolver's own key keeps its own answer


def test_a_colluder_holding_the_server_seed_predicts_the_first_roll_only_in_the_default_mode(
    client: TestClient, sessions: sessionmaker[Session], relay: BeaconRelay, runtime: Runtime
) -> None:
    """docs/fairness.md, section 5: the seed leaked before the start, every client seed chosen (the colluder
    sees them on the public link before the start, and chose their own last)."""
    api = new_tenant(client, sessions)
    misses = 0
    for mode in ("stake", *["beacon"] * 6):
        game = _game(api, mode=mode)
        for seat in game["seats"]:
            chosen = api.post(
                f"/v1/games/{game['id']}/actions",
                {
                    "type": "set_client_seed",
                    "account_id": seat["account_id"],
                    "client_seed": f"seed-{seat['seat']}",
                },
            )
            assert chosen.status_code == 200, chosen.text
        with sessions() as session:
            sealed = session.scalar(select(GameRow.sealed_server_seed).where(GameRow.id == game["id"]))
        assert sealed is not None
        leaked = open_server_seed(sealed, runtime.keys.seed_key, game["id"])
        seeds = [f"seed-{seat['seat']}" for seat in game["seats"]]
        predicted = roll(leaked, game_client_seed(seeds), 0).face

        started = api.post(
            f"/v1/games/{game['id']}/actions", {"type": "start", "account_id": game["seats"][0]["account_id"]}
        )
        assert started.status_code == 200, started.text
        first = next(entry for entry in started.json()["rolls"] if entry["nonce"] == 0)
        if mode == "stake":
            assert first["face"] == predicted  # the default mode: known before anyone acted
        else:
            accepted = next(e for e in _events(api, game["id"]) if e["kind"] == "roll_accepted")["data"]
            randomness = relay.key.sign(accepted["beacon_round"]).randomness
            assert first["face"] == beacon_roll(leaked, game_client_seed(seeds), 0, randomness).face
            misses += first["face"] != predicted
    # Six beacon games: the seed-only prediction is right 1 time in 6 by chance; all six right would be
    # a 1-in-46,656 coincidence, so the prediction fails at least once.
    assert misses >= 1


def test_the_tenant_default_mode_applies_to_games_that_name_none(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = new_tenant(client, sessions)
    assert api.get("/v1/tenant/settings").json()["fairness_mode"] == "stake"
    assert _game(api, mode=None)["fairness"]["mode"] == "stake"
    changed = api.put("/v1/tenant/settings", {"rake": {"bps": 0, "cap": None}, "fairness_mode": "beacon"})
    assert changed.status_code == 200, changed.text
    assert changed.json()["fairness_mode"] == "beacon"
    game = _game(api, mode=None)
    assert game["fairness"]["mode"] == "beacon"
    assert game["fairness"]["commitment"]["fairness_mode"] == "beacon"
    assert _game(api, mode="stake")["fairness"]["mode"] == "stake"  # a game's own choice wins
    # Rake only: the mode stays as it was.
    kept = api.put("/v1/tenant/settings", {"rake": {"bps": 100, "cap": None}})
    assert kept.json()["fairness_mode"] == "beacon"
    refused = api.post(
        "/v1/games",
        {"vigo_account_id": "a", "player_account_ids": ["b"], "stake": 1, "fairness_mode": "drand"},
    )
    assert refused.status_code == 422, refused.text
    assert "fairness_mode" in refused.text


def test_another_game_cannot_take_money_from_a_wallet_a_waiting_roll_holds(
    client: TestClient, sessions: sessionmaker[Session], relay: BeaconRelay
) -> None:
    api = new_tenant(client, sessions)
    waiting = _game(api)
    shared = waiting["seats"][1]["account_id"]
    other_vigo = api.wallet(START)
    other = api.post(
        "/v1/games", {"vigo_account_id": other_vigo, "player_account_ids": [shared], "stake": 10}
    ).json()
    relay.stop_publishing()
    held = api.post(
        f"/v1/games/{waiting['id']}/actions",
        {"type": "start", "account_id": waiting["seats"][0]["account_id"]},
    )
    assert held.status_code == 202, held.text

    # The other game's start would take the shared wallet's ante: refused, nothing written.
    refused = api.post(f"/v1/games/{other['id']}/actions", {"type": "start", "account_id": other_vigo})
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "wallet_held"
    assert api.get(f"/v1/games/{other['id']}").json()["status"] == "open"
    assert api.balance(shared) == START
    assert api.balance(other_vigo) == START

    relay.resume_publishing()
    # The waiting game resolves on its next action; then the other game plays as usual.
    player = held.json()["seats"][1]["account_id"]
    assert (
        api.post(f"/v1/games/{waiting['id']}/actions", {"type": "roll", "account_id": player}).status_code
        == 200
    )
    started = api.post(f"/v1/games/{other['id']}/actions", {"type": "start", "account_id": other_vigo})
    assert started.status_code == 200, started.text


def test_a_retry_of_a_resolved_drawing_action_replays_its_rolls(
    client: TestClient, sessions: sessionmaker[Session], relay: BeaconRelay
) -> None:
    """The request that waited and resolved its roll stores the resolved answer (200, with the rolls) over
    the acceptance's 202: a retry under the same key gets what the first attempt answered."""
    api = new_tenant(client, sessions)
    game = _game(api)
    start = {"type": "start", "account_id": game["seats"][0]["account_id"]}
    first = api.post(f"/v1/games/{game['id']}/actions", start, headers={"Idempotency-Key": "start-1"})
    assert first.status_code == 200, first.text
    assert [entry["nonce"] for entry in first.json()["rolls"]] == [0]
    again = api.post(f"/v1/games/{game['id']}/actions", start, headers={"Idempotency-Key": "start-1"})
    assert again.status_code == 200, again.text
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.content == first.content


def test_a_roll_waiting_past_its_deadline_shows_on_metrics_with_the_wallets_it_holds(
    client: TestClient,
    sessions: sessionmaker[Session],
    relay: BeaconRelay,
    runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the operator's alerts read (deploy/prometheus/): the roll, how late, and the players' money it
    keeps in place, counted from the seats the database holds."""
    monkeypatch.setattr(metrics, "SCRAPE_REUSE_SECONDS", 0.0, raising=False)
    monkeypatch.setattr(metrics_backlog, "BACKLOG_REUSE_SECONDS", 0.0, raising=False)
    api = new_tenant(client, sessions)
    game = _game(api)
    relay.stop_publishing()
    start = {"type": "start", "account_id": game["seats"][0]["account_id"]}
    assert api.post(f"/v1/games/{game['id']}/actions", start).status_code == 202
    waiting = scrape(client)
    assert value(waiting, "pokna_beacon_rolls_overdue") == 0  # late only past its round's due time + 5 s

    with sessions.begin() as session:  # ten minutes on, the relays still silent and no sweep resolving it
        deadline = session.scalar(select(GameRow.turn_deadline_at).where(GameRow.id == game["id"]))
        assert deadline is not None
        session.execute(
            update(GameRow)
            .where(GameRow.id == game["id"])
            .values(turn_deadline_at=deadline - timedelta(minutes=10))
        )
        held = session.scalar(
            select(func.count()).select_from(Account).where(Account.roll_hold_game_id == game["id"])
        )
    late = scrape(client)
    assert value(late, "pokna_beacon_rolls_overdue") == 1
    assert 590 <= value(late, "pokna_beacon_roll_overdue_seconds") < 660  # its deadline was a few s ahead
    assert held == 3
    assert value(late, "pokna_wallets_held_by_overdue_rolls") == held
    assert value(late, "pokna_game_deadlines_overdue") == 0  # it waits for its round, not a default action

    relay.resume_publishing()
    clock = Clock(now=utc_now(), open_game_ttl=timedelta(hours=1))
    assert swept(runtime, clock, beacon=runtime.beacon).rolls_resolved == 1
    resolved = scrape(client)
    assert value(resolved, "pokna_beacon_rolls_overdue") == 0
    assert value(resolved, "pokna_beacon_roll_overdue_seconds") == 0
    assert value(resolved, "pokna_wallets_held_by_overdue_rolls") == 0


def test_a_drawing_action_waits_for_its_round_without_a_thread(
    client: TestClient, sessions: sessionmaker[Session], relay: BeaconRelay, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request's wait for the round is awaited in the event loop (pokna.drand on httpx's async client),
    as its statements are on the driver's pool: no thread holds it, no session."""
    api = new_tenant(client, sessions)
    with watched(monkeypatch) as detours:
        game = _play_to_the_end(api, relay, _game(api))
    assert game["status"] in ("settled", "cancelled")
    assert detours.threads == []
    assert detours.checkouts == 0
