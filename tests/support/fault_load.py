"""Eight clients moving money and playing games against real `pokna serve` processes while a fault
strikes, and the checks of what the service kept afterwards.

Each client is an integrating app that does what the API asks of it: every POST carries an
Idempotency-Key, and whatever goes wrong on the way (a connection refused or cut, a 503, a 409
"still in progress") is retried with the same key and body until it is answered for good or the
client's patience (`PATIENCE`) runs out. Every attempt is recorded, so the test can say how many
requests met the fault, how long clients saw the service away, and that no answer was ever a 500.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.ledger import JournalPosting, JournalTransaction
from pokna_verify.ledger.check import verify_export
from support.driver import export_jsonl
from support.game_play import FINAL, Api, check_finished_game, obliging

CLIENTS = 8
PATIENCE = 90.0  # seconds a client keeps retrying one request
DEPOSIT, WITHDRAWAL, FUNDS = 7, 3, 10_000


@dataclass
class Attempt:
    sent_at: float
    answered_at: float
    status: int | None  # None: no answer (refused, cut off)


@dataclass
class Request:
    kind: str
    path: str
    body: dict[str, Any]
    key: str
    attempts: list[Attempt] = field(default_factory=list)
    answer: Any = None

    @property
    def status(self) -> int | None:
        return self.attempts[-1].status if self.attempts else None

    @property
    def met_the_fault(self) -> bool:
        return len(self.attempts) > 1


class Targets:
    """The servers the clients may send to (a load balancer's list), changed as servers die and start."""

    def __init__(self, bases: Sequence[str]) -> None:
        self._bases = list(bases)
        self._lock = threading.Lock()

    def pick(self, turn: int) -> str:
        with self._lock:
            return self._bases[turn % len(self._bases)]

    def drop(self, dead: str) -> None:
        with self._lock:
            self._bases.remove(dead)

    def add(self, base: str) -> None:
        with self._lock:
            self._bases.append(base)


class Load:
    """The clients, their shared bookkeeping, and the stop switch the fault schedule pulls."""

    def __init__(self, targets: Targets, api_key: str, *, turn_timeout_seconds: int = 60) -> None:
        self.targets = targets
        self.api_key = api_key
        self.turn_timeout_seconds = turn_timeout_seconds
        self.requests: list[Request] = []
        self.games: list[str] = []
        self.banks: dict[str, tuple[int, int]] = {}  # bank wallet -> (deposits, withdrawals) confirmed
        self.stop = threading.Event()
        self.failures: list[BaseException] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self._keys = itertools.count()
        self._threads = [threading.Thread(target=self._client, args=(index,)) for index in range(CLIENTS)]

    # --- running -----------------------------------------------------------------------------------------

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(timeout=PATIENCE + 120)
        assert not any(thread.is_alive() for thread in self._threads), "a client did not stop"

    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def answered_ok(self) -> int:
        with self._lock:
            return sum(1 for request in self.requests if request.status is not None and request.status < 300)

    def wait_for(self, condition: Callable[[], bool], limit: float = 60.0) -> None:
        deadline = time.monotonic() + limit
        while not condition():
            assert time.monotonic() < deadline, "the load did not get there in time"
            assert not self.failures, self.failures
            time.sleep(0.02)

    def _client(self, index: int) -> None:
        try:
            with httpx.Client(timeout=30) as http:
                self._play(index, http)
        except BaseException as failure:
            self.failures.append(failure)

    def _play(self, index: int, http: httpx.Client) -> None:
        bank = self._send(index, http, "account", "/v1/accounts", {})["id"]
        seats = [self._send(index, http, "account", "/v1/accounts", {})["id"] for _ in range(3)]
        for seat in seats:
            self._send(index, http, "deposit", f"/v1/accounts/{seat}/deposits", {"amount": FUNDS})
        deposits = withdrawals = 0
        while not self.stop.is_set():
            self._send(index, http, "deposit", f"/v1/accounts/{bank}/deposits", {"amount": DEPOSIT})
            deposits += 1
            self._send(index, http, "withdrawal", f"/v1/accounts/{bank}/withdrawals", {"amount": WITHDRAWAL})
            withdrawals += 1
            terms = {
                "vigo_account_id": seats[0],
                "player_account_ids": seats[1:],
                "stake": 5,
                "turn_timeout_seconds": self.turn_timeout_seconds,
            }
            game = self._send(index, http, "game", "/v1/games", terms)
            with self._lock:
                self.games.append(game["id"])
            for _step in range(200):
                if game["status"] in FINAL:
                    break
                game = self._send(index, http, "action", f"/v1/games/{game['id']}/actions", obliging(game))
        with self._lock:
            self.banks[bank] = (deposits, withdrawals)

    def _send(self, index: int, http: httpx.Client, kind: str, path: str, body: dict[str, Any]) -> Any:
        """POST until answered for good; the answer's JSON. A refusal by the rules fails the client."""
        request = Request(kind, path, body, key=f"c{index}-{next(self._keys)}")
        with self._lock:
            self.requests.append(request)
        headers = {"Authorization": f"Bearer {self.api_key}", "Idempotency-Key": request.key}
        give_up = time.monotonic() + PATIENCE
        for turn in itertools.count(index):
            sent_at = time.monotonic()
            with self._lock:
                self._in_flight += 1
            try:
                response = http.post(self.targets.pick(turn) + path, json=body, headers=headers)
                status: int | None = response.status_code
            except httpx.TransportError:
                response, status = None, None
            finally:
                with self._lock:
                    self._in_flight -= 1
            request.attempts.append(Attempt(sent_at, time.monotonic(), status))
            if response is not None and status is not None and not _retryable(response):
                assert status < 300, f"{kind} {path} {body}: {status} {response.text}"
                request.answer = response.json()
                return request.answer
            assert time.monotonic() < give_up, f"{kind} {path} never answered: {request.attempts[-5:]}"
            time.sleep(0.1)
        raise AssertionError("unreachable")

    # --- figures ------------------------------------------------------------------------------------------

    def figures(self, faults_at: Sequence[float]) -> dict[str, Any]:
        attempts = [attempt for request in self.requests for attempt in request.attempts]
        statuses = Counter(attempt.status for attempt in attempts)
        return {
            "requests": len(self.requests),
            "attempts": len(attempts),
            "met_the_fault": sum(request.met_the_fault for request in self.requests),
            "cut_off_in_flight": sum(
                1
                for attempt in attempts
                if attempt.status is None
                and any(attempt.sent_at < moment < attempt.answered_at for moment in faults_at)
            ),
            "answered_503": statuses[503],
            "no_answer": statuses[None],
            "answered_500": sum(count for status, count in statuses.items() if status and status >= 500)
            - statuses[503],
            "outage_seconds": [round(self.outage_after(moment), 2) for moment in faults_at],
            "games": len(self.games),
        }

    def outage_after(self, moment: float) -> float:
        """Seconds from the fault until a request sent after it was first answered 2xx."""
        answered = [
            attempt.answered_at
            for request in self.requests
            for attempt in request.attempts
            if attempt.sent_at >= moment and attempt.status is not None and attempt.status < 300
        ]
        return min(answered) - moment


def _retryable(response: httpx.Response) -> bool:
    if response.status_code == 503:
        return True
    if response.status_code == 409:
        return bool(response.json().get("code") == "idempotency_request_in_progress")
    return False


def check_what_was_kept(load: Load, sessions: sessionmaker[Session], api: Api, tenant_id: str) -> None:
    """Nothing answered 2xx is missing, nothing retried was applied twice, and the books and the proofs
    verify. `api` talks to a server on the database as it is after the fault."""
    statuses = Counter(attempt.status for request in load.requests for attempt in request.attempts)
    assert not [status for status in statuses if status is not None and status >= 500 and status != 503]
    assert all(request.status is not None and request.status < 300 for request in load.requests)

    money = [request for request in load.requests if request.kind in ("deposit", "withdrawal")]
    with sessions() as session:
        kept = set(
            session.scalars(
                select(JournalTransaction.id).where(
                    JournalTransaction.id.in_([request.answer["id"] for request in money])
                )
            )
        )
        assert kept == {request.answer["id"] for request in money}  # every acknowledged move is there
        for bank, (deposits, withdrawals) in load.banks.items():
            moves = dict(
                session.execute(
                    select(JournalTransaction.kind, func.count())
                    .join(JournalPosting, JournalPosting.transaction_id == JournalTransaction.id)
                    .where(JournalPosting.account_id == bank)
                    .group_by(JournalTransaction.kind)
                ).all()
            )
            # A client the stop reached before its first deposit has none, and none is in the books either.
            confirmed = {"deposit": deposits, "withdrawal": withdrawals}
            expected = {kind: count for kind, count in confirmed.items() if count}
            assert moves == expected, (
                bank,
                moves,
                expected,
            )  # each once, however retried
            assert api.balance(bank) == deposits * DEPOSIT - withdrawals * WITHDRAWAL
        report = verify_export(export_jsonl(session, tenant_id))
    assert report.valid, report.to_json()

    key_ring = api.key_ring()
    for game_id in load.games:
        check_finished_game(api, sessions, game_id, key_ring)
    rolled = {
        (event["data"]["nonce"], event["data"]["face"], game_id)
        for game_id in load.games
        for event in api.events(game_id)
        if event["kind"] == "rolled"
    }
    for request in load.requests:
        if request.kind == "action":  # every roll an acknowledged action reported is in its game
            game_id = request.answer["id"]
            assert {(roll["nonce"], roll["face"], game_id) for roll in request.answer["rolls"]} <= rolled
    assert api.trial_balance_total() == 0
