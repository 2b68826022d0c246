"""A client nobody here wrote: `openapi-python-client` generates one from the committed
openapi/openapi.json, and it plays the rules card's example of play against a real `pokna serve` —
the tenant's wallets and deposits, a table and its round, every player's client seed, every action of the
card (start, roll, vote, challenge), the proof checked offline, then a claim, a cancel, a withdrawal and
the trial balance. The generated code is never edited: if it cannot do this, the document changes.

Meanwhile a webhook endpoint, registered through the same client, receives every event of the play from a
real `pokna webhooks deliver` on a receiver on 127.0.0.1: each message verified by the `standardwebhooks`
package, each game's messages in order and exactly what the answers said (every turn as the action's
answer showed it, the start, the ending with its payouts), and each deposit and withdrawal, but nothing for
the refused withdrawal.

As in tests/dealer/test_dealer_card_example.py, the rolls are made to come out as on the card by
choosing the Vigo's client seed, which takes reading the sealed server seed as the operator.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.game import Game
from pokna.outbox.events import EVENT_TYPES
from pokna.service_keys import load_service_keys
from pokna.settings import Settings
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.fairness.proof_replay import replay_proof
from pokna_verify.fairness.protocol import game_client_seed, roll
from pokna_verify.fairness.seed_vault import open_server_seed
from pokna_verify.fairness.verification import verify_proof
from support.game_play import new_tenant_key
from support.servers import running_server
from support.webhook_receiver import Receiver, running_receiver
from support.webhook_worker import worker_process

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / ".venv" / "tools" / "bin" / "openapi-python-client"
CARD_ROLLS = ["red", "red", "blue", "blue", "red", "red", "blue", "red", "blue"]
PLAYER_SEEDS = ["p1-seed", "p2-seed", "p3-seed", "p4-seed"]
START = 10


def _generate(target: Path) -> Path:
    """The client, generated from the committed document; a warning of the generator (a part it dropped)
    fails the test."""
    if not GENERATOR.exists():
        pytest.fail(f"{GENERATOR} is missing: run `make .venv/.installed-dev`")
    environment = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ['PATH']}"}
    generated = subprocess.run(
        [
            str(GENERATOR),
            "generate",
            "--path",
            str(ROOT / "openapi" / "openapi.json"),
            "--meta",
            "none",
            "--output-path",
            str(target / "pokna_client"),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert "WARNING" not in generated.stdout + generated.stderr, generated.stdout + generated.stderr
    return target


@pytest.fixture
def generated(tmp_path: Path) -> Iterator[ModuleType]:
    sys.path.insert(0, str(_generate(tmp_path / "generated")))
    try:
        yield importlib.import_module("pokna_client")
    finally:
        sys.path.remove(str(tmp_path / "generated"))
        for name in [name for name in sys.modules if name.split(".")[0] == "pokna_client"]:
            del sys.modules[name]


def test_the_generator_keeps_every_operation_and_names_actions_alike(tmp_path: Path) -> None:
    """Nothing of the document is dropped with a warning (the audit bundle's JSON Lines once was), and the
    action models read as one family (`StartAction` beside `RollAction`, not `Start`)."""
    package = _generate(tmp_path) / "pokna_client"
    document = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    generated = {path.stem for path in (package / "api").rglob("*.py")}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            assert operation["operationId"] in generated, (method, path)
    bundle = (package / "api" / "audit" / "audit_bundle.py").read_text()
    assert "response_200" in bundle or "File" in bundle, "the bundle's answer was dropped"
    models = {path.stem for path in (package / "models").glob("*.py")}
    actions = {
        "start_action",
        "roll_action",
        "claim_action",
        "challenge_action",
        "vote_action",
        "cancel_action",
    }
    assert actions <= models, sorted(models)
    assert not {"start", "set_client_seed"} & models


def _vigo_seed(server_seed: str, player_seeds: list[str], colors: list[str]) -> str:
    for attempt in range(100_000):
        candidate = f"vigo-{attempt}"
        client_seed = game_client_seed([candidate, *player_seeds])
        if all(roll(server_seed, client_seed, nonce).color == color for nonce, color in enumerate(colors)):
            return candidate
    raise AssertionError(f"no Vigo seed gives {colors}")


class Card:
    """The generated client's operations, each call checked for the documented success type."""

    def __init__(self, package: ModuleType, base: str, api_key: str) -> None:
        self.client = package.AuthenticatedClient(base_url=base, token=api_key)
        self.api = importlib.import_module("pokna_client.api")
        self.models = importlib.import_module("pokna_client.models")
        self.keys = 0
        self.announced = Announced()
        self.money: list[tuple[str, str, int, int]] = []  # (event type, wallet, amount, balance after)

    def call(self, group: str, operation: str, expected: str, *args: Any, **kwargs: Any) -> Any:
        module = importlib.import_module(f"pokna_client.api.{group}.{operation}")
        answer = module.sync(*args, client=self.client, **kwargs)
        assert type(answer).__name__ == expected, answer
        return answer

    def post(self, group: str, operation: str, expected: str, *args: Any, **kwargs: Any) -> Any:
        """Every POST with an Idempotency-Key, as the README asks an integrator to do."""
        self.keys += 1
        return self.call(group, operation, expected, *args, idempotency_key=f"card-{self.keys}", **kwargs)

    def act(self, game_id: str, action: Any) -> Any:
        game = self.post("games", "act", "GameActionOut", game_id, body=action)
        self.announced.after(action.type_, game)  # a client seed too: it moves the version
        return game

    def created(self, game: Any) -> Any:
        self.announced.created(game)
        return game


def _turn(version: int, account_ids: list[str], allowed: list[Any], deadline_at: datetime) -> dict[str, Any]:
    return {
        "version": version,
        "account_ids": list(account_ids),
        "allowed_actions": [getattr(action, "value", action) for action in allowed],
        "deadline_at": deadline_at,
    }


class Announced:
    """What a watcher of each game must be told, in order, as the client's answers showed it."""

    def __init__(self) -> None:
        self.games: dict[str, list[tuple[str, Any]]] = {}

    def created(self, game: Any) -> None:
        turn = game.turn
        self.games[game.id] = [
            ("game.created", (game.version, [seat.account_id for seat in game.seats])),
            ("game.turn", _turn(game.version, turn.account_ids, turn.allowed_actions, turn.deadline_at)),
        ]

    def after(self, action: str, game: Any) -> None:
        told = self.games[game.id]
        if action == "start":
            told.append(("game.started", game.pot))
        if game.status.value in ("settled", "cancelled"):
            payouts = [(payout.account_id, payout.amount) for payout in game.outcome.payouts]
            told.append(
                (f"game.{game.status.value}", (game.outcome.reason, payouts, game.fairness.public_url))
            )
        else:
            turn = game.turn
            told.append(
                ("game.turn", _turn(game.version, turn.account_ids, turn.allowed_actions, turn.deadline_at))
            )


def _as_told(event: dict[str, Any]) -> tuple[str, Any]:
    """A received game event in the terms of `Announced`."""
    kind, data = event["type"], event["data"]
    match kind:
        case "game.created":
            return kind, (data["version"], data["account_ids"])
        case "game.started":
            return kind, data["pot"]
        case "game.turn":
            deadline = datetime.fromisoformat(data["deadline_at"].replace("Z", "+00:00"))
            return kind, _turn(data["version"], data["account_ids"], data["allowed_actions"], deadline)
        case _:
            payouts = [(payout["account_id"], payout["amount"]) for payout in data["payouts"]]
            return kind, (data["reason"], payouts, data["public_url"])


def _check_webhooks(receiver: Receiver, secret: str, announced: Announced, money: list[Any]) -> None:
    expected = sum(len(told) for told in announced.games.values()) + len(money)
    receiver.wait_for(expected, seconds=120)
    receiver.wait_idle()
    delivered = receiver.delivered()
    receiver.verify_all(secret)  # the standardwebhooks package: signature and timestamp of every message
    assert len(delivered) == expected, [request.event["type"] for request in delivered]
    events = [request.event for request in delivered]
    for game_id, told in announced.games.items():
        assert [_as_told(event) for event in events if event["data"].get("game_id") == game_id] == told
    moved = [
        (event["type"], event["data"]["account_id"], event["data"]["amount"], event["data"]["balance"])
        for event in events
        if event["type"].startswith("ledger.")
    ]
    assert sorted(moved) == sorted(money)


def test_the_generated_client_plays_the_cards_example(
    generated: ModuleType, database_url: str, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    api_key = new_tenant_key(sessions)
    environment = {"POKNA_DATABASE_URL": database_url}
    with running_receiver() as receiver, running_server(environment, data_dir) as base:
        keys = load_service_keys(Settings(data_dir=data_dir, database_url=database_url))
        card = Card(generated, base, api_key)
        m = card.models
        endpoint = card.post(
            "webhooks",
            "create_endpoint",
            "WebhookEndpointSecretOut",
            body=m.WebhookEndpointCreate(
                url=receiver.url, event_types=[m.EventType(kind) for kind in EVENT_TYPES]
            ),
        )
        worker = worker_process(
            {**environment, "POKNA_DATA_DIR": str(data_dir)},
            tmp_path / "worker.log",
            *("--poll-seconds", "0.05", "--max-seconds", "300"),
        )
        with worker:
            _play_the_card(card, sessions, keys.seed_key, m)
            _check_webhooks(receiver, endpoint.secret, card.announced, card.money)


def _play_the_card(card: Card, sessions: sessionmaker[Session], seed_key: bytes, m: ModuleType) -> None:
    """The card's example, then a cancelled round, a claimed duel and a withdrawal, all through the client."""
    accounts = []
    for index in range(5):
        wallet = card.post(
            "accounts", "open_wallet", "AccountOut", body=m.AccountCreate(external_id=f"seat-{index}")
        )
        card.post(
            "accounts", "deposit", "JournalTransactionOut", wallet.id, body=m.MoneyMovement(amount=START)
        )
        card.money.append(("ledger.deposit.posted", wallet.id, START, START))
        accounts.append(wallet.id)
    vigo, p1, p2, p3, p4 = accounts

    def balances() -> list[int]:
        return [card.call("accounts", "get_account", "AccountOut", account).balance for account in accounts]

    table = card.post("tables", "create_table", "TableOut", body=m.TableCreate(account_ids=accounts, stake=1))
    game = card.created(card.post("tables", "deal_round", "GameOut", table.id))
    with sessions() as session:
        row = session.scalars(select(Game).where(Game.id == game.id)).one_or_none()
        assert row is not None
        server_seed = open_server_seed(row.sealed_server_seed, seed_key, game.id)
    vigo_seed = _vigo_seed(server_seed, PLAYER_SEEDS, CARD_ROLLS)
    for account, seed in zip(accounts, [vigo_seed, *PLAYER_SEEDS], strict=True):
        game = card.act(
            game.id, m.SetClientSeedAction(type_="set_client_seed", account_id=account, client_seed=seed)
        )
    assert [seat.status.value for seat in game.seats] == [
        "vigo",
        "to_roll",
        "to_roll",
        "to_roll",
        "to_roll",
    ]
    assert [action for action in game.turn.allowed_actions] == ["set_client_seed", "start", "cancel"]

    # The Vigo sets the stake at 1 credit and rolls red. Each player antes 1 credit, for a pot of 4.
    game = card.act(game.id, m.StartAction(type_="start", account_id=vigo))
    assert (game.favor.value, game.pot, [r.color.value for r in game.rolls]) == ("red", 4, ["red"])
    assert balances() == [10, 9, 9, 9, 9]

    # Player 1 rolls red, 2 and 3 roll blue, 4 rolls red; the Vigo pays 2 into the pot.
    for player in (p1, p2, p3, p4):
        game = card.act(game.id, m.RollAction(type_="roll", account_id=player))
    assert [seat.status.value for seat in game.seats[1:]] == [
        "in_favor",
        "eliminated",
        "eliminated",
        "in_favor",
    ]
    assert (game.phase, game.pot, balances()) == ("voting", 6, [8, 9, 9, 9, 9])

    # Player 1 offers to split, Player 4 refuses: they roll again; 1 rolls red, 4 rolls blue.
    game = card.act(game.id, m.VoteAction(type_="vote", account_id=p1, choice=m.VoteActionChoice.SPLIT))
    game = card.act(game.id, m.VoteAction(type_="vote", account_id=p4, choice=m.VoteActionChoice.ROLL_AGAIN))
    assert game.phase == "seeking"
    game = card.act(game.id, m.RollAction(type_="roll", account_id=p1))
    game = card.act(game.id, m.RollAction(type_="roll", account_id=p4))
    assert (game.phase, game.turn.account_ids, set(game.turn.allowed_actions)) == (
        "lone_survivor",
        [p1],
        {"claim", "challenge"},
    )

    # Player 1 challenges; the Vigo rolls red, Player 1 blue: the Vigo wins the pot of 8.
    game = card.act(game.id, m.ChallengeAction(type_="challenge", account_id=p1))
    assert (game.pot, balances()) == (8, [7, 8, 9, 9, 9])
    game = card.act(game.id, m.RollAction(type_="roll", account_id=vigo))
    game = card.act(game.id, m.RollAction(type_="roll", account_id=p1))
    assert (game.status.value, game.outcome.reason, game.pot) == ("settled", "challenge_lost", 0)
    assert [(payout.account_id, payout.amount) for payout in game.outcome.payouts] == [(vigo, 8)]
    assert balances() == [15, 8, 9, 9, 9]

    events = card.call("games", "game_events", "PageGameEventOut", game.id, limit=100)
    rolled = [event.data.to_dict() for event in events.data if event.kind == "rolled"]
    assert [event["color"] for event in rolled] == CARD_ROLLS

    # The proof, checked offline with the published keys.
    proof = card.call("games", "game_proof", "SignedProofOut", game.id)
    published = card.call("fairness", "fairness_keys", "KeyRingOut")
    assert proof.server_seed == server_seed
    report = verify_proof(proof.to_dict(), KeyRing.from_json(published.to_dict()), replay=replay_proof)
    assert report.valid, report

    # The next round passes the title of Vigo to Player 1; it is called off before the start.
    second = card.created(card.post("tables", "deal_round", "GameOut", table.id))
    assert second.seats[0].account_id == p1
    second = card.act(second.id, m.CancelAction(type_="cancel"))
    assert second.status.value == "cancelled"

    # A lone survivor who claims: a game of one player whose roll matches the favor.
    duel = card.created(
        card.post(
            "games",
            "create_game",
            "GameOut",
            body=m.GameCreate(vigo_account_id=vigo, player_account_ids=[p2], stake=2),
        )
    )
    with sessions() as session:
        row = session.scalars(select(Game).where(Game.id == duel.id)).one_or_none()
        assert row is not None
        duel_seed = open_server_seed(row.sealed_server_seed, seed_key, duel.id)
    duel_vigo_seed = _vigo_seed(duel_seed, ["p2-seed"], ["blue", "blue"])
    card.act(
        duel.id, m.SetClientSeedAction(type_="set_client_seed", account_id=vigo, client_seed=duel_vigo_seed)
    )
    card.act(duel.id, m.SetClientSeedAction(type_="set_client_seed", account_id=p2, client_seed="p2-seed"))
    card.act(duel.id, m.StartAction(type_="start", account_id=vigo))
    duel = card.act(duel.id, m.RollAction(type_="roll", account_id=p2))
    assert (duel.phase, duel.pot, duel.turn.allowed_actions) == (
        "lone_survivor",
        2,
        ["claim", "challenge"],
    )
    duel = card.act(duel.id, m.ClaimAction(type_="claim", account_id=p2))
    assert (duel.outcome.reason, balances()) == ("claimed", [15, 8, 9, 9, 9])

    card.post("accounts", "withdraw", "JournalTransactionOut", p2, body=m.MoneyMovement(amount=9))
    card.money.append(("ledger.withdrawal.posted", p2, 9, 0))
    # The 409's own type: its codes an enum, the refusal's members typed.
    refused = card.post("accounts", "withdraw", "WithdrawResponse409", p2, body=m.MoneyMovement(amount=1))
    assert (refused.status, refused.code.value, refused.balance, refused.change) == (
        409,
        "insufficient_funds",
        0,
        -1,
    )
    books = card.call("ledger", "trial_balance", "TrialBalanceOut")
    assert books.total == 0
    assert sum(balances()) == 5 * START - 9
