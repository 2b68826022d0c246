"""Playing games over HTTP as an integrating app would, and checking what a finished game left behind.

`Api` wraps any HTTP client shaped like httpx's (an `httpx.Client` on a real server, or a `TestClient`), so
the same play and the same checks run against an in-process app, one real `pokna serve` or several of them
taking turns.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import uuid4

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.game import Game as GameRow
from pokna.db.models.game import GameRoll
from pokna.db.models.ledger import JournalTransaction
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.fairness.proof_replay import replay_proof
from pokna_verify.fairness.verification import VerificationReport, verify_proof
from support.driver import new_api_key

Game = dict[str, Any]
Policy = Callable[[Game], dict[str, Any]]
FINAL = ("settled", "cancelled")
CONFLICT_CODES = frozenset({"not_your_turn", "wrong_phase", "already_voted", "game_over", "conflict"})


class Response(Protocol):
    @property
    def status_code(self) -> int: ...

    @property
    def text(self) -> str: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    def json(self, **kwargs: Any) -> Any: ...


class HttpClient(Protocol):
    def get(self, url: str, *, params: dict[str, Any] | None, headers: dict[str, str]) -> Response: ...

    def post(self, url: str, *, json: Any, headers: dict[str, str]) -> Response: ...


@dataclass
class Api:
    """One tenant's view of one server."""

    http: HttpClient
    api_key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    def get(self, path: str, **params: Any) -> Response:
        return self.http.get(path, params=params or None, headers=self.headers)

    def post(self, path: str, body: Any = None, *, idempotency_key: str | None = None) -> Response:
        headers = dict(self.headers)
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return self.http.post(path, json=body, headers=headers)

    def ok(self, response: Response, status: int = 200) -> Any:
        assert response.status_code == status, f"{response.status_code}: {response.text}"
        return response.json()

    def deposit(self, account_id: str, amount: int) -> Response:
        """A deposit under a key of its own (money moves only under a key)."""
        return self.post(
            f"/v1/accounts/{account_id}/deposits", {"amount": amount}, idempotency_key=f"move-{uuid4()}"
        )

    def withdraw(self, account_id: str, amount: int) -> Response:
        return self.post(
            f"/v1/accounts/{account_id}/withdrawals", {"amount": amount}, idempotency_key=f"move-{uuid4()}"
        )

    def wallet(self, balance: int = 0) -> str:
        account_id: str = self.ok(self.post("/v1/accounts", {}), 201)["id"]
        if balance:
            self.ok(self.deposit(account_id, balance), 201)
        return account_id

    def balance(self, account_id: str) -> int:
        balance: int = self.ok(self.get(f"/v1/accounts/{account_id}"))["balance"]
        return balance

    def create_game(self, vigo: str, players: Sequence[str], stake: int = 5, **terms: Any) -> Game:
        body = {"vigo_account_id": vigo, "player_account_ids": list(players), "stake": stake, **terms}
        game: Game = self.ok(self.post("/v1/games", body), 201)
        return game

    def game(self, game_id: str) -> Game:
        game: Game = self.ok(self.get(f"/v1/games/{game_id}"))
        return game

    def act(self, game_id: str, body: dict[str, Any], *, idempotency_key: str | None = None) -> Response:
        return self.post(f"/v1/games/{game_id}/actions", body, idempotency_key=idempotency_key)

    def events(self, game_id: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 100}
            if cursor is not None:
                params["starting_after"] = cursor
            page = self.ok(self.get(f"/v1/games/{game_id}/events", **params))
            events += page["data"]
            if not page["has_more"]:
                return events
            cursor = page["next_cursor"]

    def proof(self, game_id: str) -> dict[str, Any]:
        proof: dict[str, Any] = self.ok(self.get(f"/v1/games/{game_id}/proof"))
        return proof

    def trial_balance_total(self) -> int:
        total: int = self.ok(self.get("/v1/ledger/trial-balance"))["total"]
        return total

    def key_ring(self) -> KeyRing:
        return KeyRing.from_json(self.ok(self.get("/v1/fairness/keys")))


def new_tenant_key(sessions: sessionmaker[Session], name: str = "Mos Espa") -> str:
    return new_api_key(sessions, name).secret


# --- deciding --------------------------------------------------------------------------------------------


def obliging(game: Game) -> dict[str, Any]:
    """Start, roll, split, claim: the shortest way to the end."""
    turn = game["turn"]
    account, allowed = turn["account_ids"][0], turn["allowed_actions"]
    if "start" in allowed:
        return {"type": "start", "account_id": account}
    if "vote" in allowed:
        return {"type": "vote", "account_id": account, "choice": "split"}
    if "claim" in allowed:
        return {"type": "claim", "account_id": account}
    return {"type": "roll", "account_id": account}


def random_policy(
    rng: random.Random, *, cancel_chance: float = 0.05, roll_again_chance: float = 0.3
) -> Policy:
    """Every legal decision with some probability; a game seldom goes on for long."""

    def decide(game: Game) -> dict[str, Any]:
        turn = game["turn"]
        allowed = turn["allowed_actions"]
        account = rng.choice(turn["account_ids"]) if turn["account_ids"] else None
        if "start" in allowed:
            if rng.random() < cancel_chance:
                return {"type": "cancel"}
            return {"type": "start", "account_id": account}
        if "vote" in allowed:
            choice = "roll_again" if rng.random() < roll_again_chance else "split"
            return {"type": "vote", "account_id": account, "choice": choice}
        if "claim" in allowed:
            return {"type": rng.choice(("claim", "challenge")), "account_id": account}
        return {"type": "roll", "account_id": account}

    return decide


def play(apis: Sequence[Api], game: Game, policy: Policy = obliging, max_steps: int = 400) -> Game:
    """Act until the game ends, each request through the next of `apis` in turn; every action must apply."""
    for index in range(max_steps):
        if game["status"] in FINAL:
            return game
        api = apis[index % len(apis)]
        game = api.ok(api.act(game["id"], policy(game)))
    raise AssertionError(f"game {game['id']} did not end within {max_steps} actions: {game}")


# --- checking --------------------------------------------------------------------------------------------


def verify(
    proof: dict[str, Any], key_ring: KeyRing, receipt: dict[str, Any] | None = None
) -> VerificationReport:
    return verify_proof(proof, key_ring, replay=replay_proof, receipt=receipt)


def check_finished_game(api: Api, sessions: sessionmaker[Session], game_id: str, key_ring: KeyRing) -> Game:
    """What every finished game must satisfy, however it was played and however many raced on it.

    Rolls: nonces 0..n-1 exactly, the same in the rows, the events and the proof. Money: each transfer
    the rules called for (the proof's, which the replay ties to the actions) posted exactly once, and the
    pot empty. The proof verifies against the published key ring and the commitment given at creation.
    """
    game = api.game(game_id)
    assert game["status"] in FINAL, game
    assert game["pot"] == 0
    assert api.balance(game["pot_account_id"]) == 0
    proof = api.proof(game_id)
    report = verify(proof, key_ring, receipt=game["fairness"]["commitment"])
    assert report.valid, report.to_json()
    assert not report.not_run, report.to_json()

    events = api.events(game_id)
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    rolled = [event["data"]["nonce"] for event in events if event["kind"] == "rolled"]
    with sessions() as session:
        rows = list(
            session.scalars(
                select(GameRoll.nonce).where(GameRoll.game_id == game_id).order_by(GameRoll.nonce)
            )
        )
        event_count = session.scalar(select(GameRow.event_count).where(GameRow.id == game_id))
        journal = list(
            session.execute(
                select(JournalTransaction.id, JournalTransaction.kind)
                .where(JournalTransaction.reference == game_id)
                .order_by(JournalTransaction.seq)
            )
        )
    assert event_count == len(events)  # the row's counter is the last event's seq
    expected_nonces = list(range(game["fairness"]["next_nonce"]))
    assert rows == expected_nonces
    assert rolled == expected_nonces
    assert [entry["nonce"] for entry in proof["rolls"]] == expected_nonces

    money = [event["data"] for event in events if event["kind"] == "money_moved"]
    assert [(move["kind"], move["amount"]) for move in money] == [
        (transfer["kind"], transfer["amount"]) for transfer in proof["transfers"]
    ]
    assert [move["journal_transaction_id"] for move in money] == [row.id for row in journal]
    assert Counter(row.kind for row in journal) == Counter(
        transfer["kind"] for transfer in proof["transfers"]
    )
    if game["status"] == "cancelled":
        assert journal == []
    else:
        assert Counter(row.kind for row in journal)["ante"] == len(game["seats"]) - 1
    return game
