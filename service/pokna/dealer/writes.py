"""What one decision writes, gathered while the rules decide, then written by one call.

Under the game's lock the dealer decides everything in Python (pokna.dealer.action.decision): each rules step
(deadlines that passed, then the action), its money moves as the ledger's posting document, the step's
game row, events and rolls, the webhook announcements, and the request's stored answer. `GameWrites` keeps
them in order and `document` hands them to the PL/pgSQL function game_write()
(service/pokna/sql/game_write.sql), which posts, writes and records them in one round trip, or raises and
writes nothing. pokna.dealer.action.action_transaction sends it; `REFUSALS` is the dealer's one reading of
what game_write() and beacon_roll_write() refuse with.

The document (`GameWrite`, each step a `GameStep`) is gathered step by step by `GameWrites` while the
rules decide, and encoded once when the decision is sent. Each step carries its posting batch
(pokna.ledger.posting_batch) and its money events, whose `ledger_seq` only ledger_post() can tell: the
payload is sent as a JSON object with a null there, and game_write() sets that member by name. Frozen
dataclasses, not pydantic models: every value was checked where the decision made it, and this is the hot
path (pokna.ledger.posting_batch).

    {"version": 1,
     "steps": [{"game_id": "game_...", "previous_version": 3, "game": {<the game row's mutable columns>},
                "seats": [<game_seat rows>], "events": [<game_event rows>], "rolls": [<game_roll rows>],
                "money": [{"n": 1, "seq": 7, "occurred_at": "...", "payload": {..., "ledger_seq": null}}],
                "batch": {<posting batch>} or null}],
     "outbox": [<webhook_event rows>], "answer": {"key": ..., "status": 200, "body": "<its bytes>"} or null}

`n` is the money event's transaction's place in its step's batch (ledger seq = the batch's first + n - 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from pokna import metrics
from pokna.db import sqlstates
from pokna.dealer.action.locked import Recorded
from pokna.dealer.records import (
    MONEY_EVENT,
    PROOF_EVENTS,
    EventRecord,
    GameRecord,
    RollRecord,
    SeatRecord,
    event_rows,
    mutable_game_values,
    roll_rows,
    seat_row,
)
from pokna.dealer.store_postgres import encode_rows
from pokna.errors import WalletHeld
from pokna.idempotency.keyed import Refusals
from pokna.ledger import TransferBatch
from pokna.ledger.posting_batch import PostingBatch
from pokna.outbox import Event, Gathered
from pokna_verify.invariant import present

GAME_WRITE = "SELECT game_write(%s, %s::json)"
BEACON_ROLL_WRITE = "SELECT beacon_roll_write(%s, %s, %s, %s::jsonb)"
"""A beacon-mode game's acceptance, release and rolls' rounds (service/pokna/sql/beacon_roll_write.sql)."""
ROUND_TOO_NEAR_WAIT_SECONDS = 0.06
"""How long an acceptance refused as too near its round's due time (sqlstates.ROUND_TOO_NEAR) waits before
it is decided again."""

DECIDE_ATTEMPTS = 5
"""How many times a request is decided again when a wallet keeps moving under it (each time it lost a race
with another posting to a seated wallet, which a deposit or another game can be)."""


class StaleBalances(Exception):
    """game_write() refused: a wallet's balance moved after the game was read (or the seats changed while
    the lock was awaited). Nothing was written; the request is decided again on a fresh read."""


class RoundTooNear(StaleBalances):
    """beacon_roll_write() refused an acceptance too near its round's due time: decided again once that
    round is due (ROUND_TOO_NEAR_WAIT_SECONDS), naming the next one."""


REFUSALS: Refusals = {
    sqlstates.STALE_BALANCES: lambda error: StaleBalances(str(error)),
    sqlstates.ROUND_TOO_NEAR: lambda error: RoundTooNear(str(error)),
    sqlstates.WALLET_HELD: lambda error: WalletHeld(sqlstates.message_of(error)),
}
"""What the database's refusal of a decision's writes means to the dealer (any other error, an outage among
them, drops the connection and answers 503 where every path's does): stale balances and a round too near
are decided again; a held wallet is refused."""


# --- the document -------------------------------------------------------------------------------------

GAME_WRITE_VERSION = 1
"""The write's layout as game_write() reads it: raise both when a field changes."""


@dataclass(frozen=True, slots=True)
class MoneyEvent:
    n: int
    seq: int
    occurred_at: datetime
    payload: Mapping[str, Any]
    """The event's payload, `ledger_seq` last and null (game_write() sets it)."""

    def as_json(self) -> dict[str, Any]:
        return {"n": self.n, "seq": self.seq, "occurred_at": self.occurred_at, "payload": self.payload}


@dataclass(frozen=True, slots=True)
class GameStep:
    game_id: str
    previous_version: int
    """The game row is written only if it is still this version."""
    game: Mapping[str, Any]
    seats: Sequence[Mapping[str, Any]]
    events: Sequence[Mapping[str, Any]]
    money: tuple[MoneyEvent, ...]
    rolls: Sequence[Mapping[str, Any]]
    batch: PostingBatch | None

    def locking(self, accounts: tuple[str, ...]) -> GameStep:
        return replace(self, batch=present(self.batch, "a step's batch").locking(accounts))

    def as_json(self) -> dict[str, Any]:
        return {
            "game_id": self.game_id,
            "previous_version": self.previous_version,
            "game": self.game,
            "seats": self.seats,
            "events": self.events,
            "money": [money.as_json() for money in self.money],
            "rolls": self.rolls,
            "batch": None if self.batch is None else self.batch.as_json(),
        }


@dataclass(frozen=True, slots=True)
class GameWrite:
    steps: tuple[GameStep, ...]
    outbox: Sequence[Mapping[str, Any]]
    """webhook_event rows (pokna.outbox.Gathered)."""
    answer: Mapping[str, Any] | None
    """The Idempotency-Key's stored answer, if the request has a key."""
    version: int = GAME_WRITE_VERSION

    def encode(self) -> str:
        return encode_rows(
            {
                "version": self.version,
                "steps": [step.as_json() for step in self.steps],
                "outbox": self.outbox,
                "answer": self.answer,
            }
        )


# --- gathered while the rules decide ------------------------------------------------------------------


@dataclass
class GameWrites:
    tenant_id: str
    steps: list[GameStep] = field(default_factory=list)
    outbox: Gathered = field(default_factory=Gathered)
    transactions: int = 0
    finished: list[str] = field(default_factory=list)
    """How each game that ended ended, counted once written (`written`)."""
    _pending: dict[str, Recorded] = field(default_factory=dict)
    accepted_round: int | None = None
    """Beacon mode: the drand round an action accepted here waits for (pokna.dealer.beacon_rolls.accept)."""
    before: list[tuple[str, str, str]] = field(default_factory=list)
    """beacon_roll_write() calls (game, phase, document) sent before game_write(): an acceptance, a release."""
    after: list[tuple[str, str, str]] = field(default_factory=list)
    """...and after it: the rounds of the rolls it inserted."""
    answer_key: str | None = None
    """The Idempotency-Key this decision's answer is stored under: the request's own, or, for the resolution
    of a beacon roll, the key of the request that accepted it (whoever resolves it: that request, another,
    the sweep), so a retry of that key sees the result and not the 202 of the acceptance (issue 37, item 3)."""

    def beacon_phase(self, game_id: str, phase: str, document: Mapping[str, Any]) -> None:
        # A release goes before game_write() (the resolution's postings must find the wallets free); an
        # acceptance and the rolls' rounds after it (the balances it checks are those after any step the
        # same request decided first, a passed deadline's).
        (self.before if phase == "release" else self.after).append((game_id, phase, encode_rows(document)))

    def beacon_calls(self, calls: Sequence[tuple[str, str, str]]) -> list[tuple[str, str, str, str]]:
        return [(self.tenant_id, game_id, phase, document) for game_id, phase, document in calls]

    def recorded_for_proof(self, game_id: str, recorded: Recorded) -> Recorded:
        """Everything recorded so far (`recorded`, as read), with the steps gathered here and not yet
        written."""
        events, rolls = recorded
        pending_events, pending_rolls = self._pending.get(game_id, ([], []))
        return (
            [*events, *(event for event in pending_events if event.kind in PROOF_EVENTS)],
            [*rolls, *pending_rolls],
        )

    def save_step(
        self,
        game: GameRecord,
        *,
        previous_version: int,
        events: Sequence[EventRecord],
        rolls: Sequence[RollRecord],
        seeded: Sequence[SeatRecord] = (),
        batch: TransferBatch | None = None,
    ) -> None:
        money = [event for event in events if event.kind == MONEY_EVENT]
        self.steps.append(
            GameStep(
                game_id=game.id,
                previous_version=previous_version,
                game=mutable_game_values(game),
                seats=[seat_row(game.tenant_id, game.id, seat) for seat in seeded],
                events=event_rows(
                    game.tenant_id, game.id, [event for event in events if event.kind != MONEY_EVENT]
                ),
                money=tuple(
                    # game_write() sets the ledger seq the posting got (`MoneyEvent`).
                    MoneyEvent(n, event.seq, event.occurred_at, {**event.payload, "ledger_seq": None})
                    for n, event in enumerate(money, start=1)
                ),
                rolls=roll_rows(game.tenant_id, game.id, rolls),
                batch=None if batch is None else batch.document,
            )
        )
        if batch is not None:
            self.transactions += len(batch.transaction_ids)
        pending_events, pending_rolls = self._pending.setdefault(game.id, ([], []))
        pending_events.extend(events)
        pending_rolls.extend(rolls)

    def record(self, ordering_key: str, event: Event) -> str:
        """The outbox's `Gathered.record`: written by game_write() with the step that announces it."""
        return self.outbox.record(ordering_key, event)

    def stored(self, status: int, body: str) -> dict[str, Any] | None:
        """The stored answer game_write() records under `answer_key`, if there is one."""
        return None if self.answer_key is None else {"key": self.answer_key, "status": status, "body": body}

    def document(self, answer: Mapping[str, Any] | None = None) -> str:
        """game_write()'s argument, encoded once."""
        return GameWrite(tuple(locking_all_first(self.steps)), self.outbox.rows, answer).encode()

    def written(self, seconds: float) -> None:
        """Count what was written, once it was: a decision made again counts once."""
        if self.transactions:
            metrics.ledger_posted(self.transactions, seconds)
        for reason in self.finished:
            metrics.game_finished(reason)

    def __bool__(self) -> bool:
        return bool(self.steps or self.outbox.rows or self.before)


def locking_all_first(steps: list[GameStep]) -> list[GameStep]:
    """The steps, their first posting locking every account any of them posts to.

    Each posting locks its accounts in ascending id order, in one statement; a request of several posting
    steps (deadlines that passed, then the action) would lock a later step's accounts (the revenue account
    of a rake) after the first step's, out of that order, while a posting on another of the tenant's chains
    may hold one and wait for another: so the first posting locks them all (ledger_post() locks its batch's
    `accounts`, which may name more than its postings touch)."""
    posting = [(index, step.batch) for index, step in enumerate(steps) if step.batch is not None]
    if len(posting) < 2:
        return steps
    every = tuple(sorted({account for _, batch in posting for account in batch.accounts}))
    first = posting[0][0]
    return [*steps[:first], steps[first].locking(every), *steps[first + 1 :]]
