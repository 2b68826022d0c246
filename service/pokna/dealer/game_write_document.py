"""The game write: the document a game request sends to game_write() (service/pokna/sql/game_write.sql), as
a type.

Gathered step by step by pokna.dealer.writes.GameWrites while the rules decide, and encoded once when the
decision is sent. Each step carries its posting batch (pokna.ledger.posting_batch) and its money events,
whose `ledger_seq` only ledger_post() can tell: the payload is sent as a JSON object with a null there, and
game_write() sets that member by name. Frozen dataclasses, not pydantic models: every value was checked
where the decision made it, and this is the hot path (pokna.ledger.posting_batch).

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
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from pokna.dealer.store_postgres import encode_rows
from pokna.ledger.posting_batch import PostingBatch

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
        assert self.batch is not None
        return replace(self, batch=self.batch.locking(accounts))

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
