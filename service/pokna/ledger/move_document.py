"""The ledger move: the document a deposit or withdrawal sends to ledger_move()
(service/pokna/sql/ledger_move.sql), as a type.

Built by pokna.ledger.moving before the lock. What only ledger_post() can tell (the seq, the previous hash,
the hash, the wallet's balance after the move) is not in it: the answer's body and each announcement's body
travel as JSON objects holding a stand-in of the right type at each such member, and ledger_move() sets
those members by name on the `json` values (which keep their members' order and text), so no text is
patched on either side:

- the answer's body (pokna.ledger.schemas.JournalTransactionOut): `seq`, `prev_hash`, `hash`, `balance`;
- an announcement's body (pokna.outbox.events.DepositPosted, WithdrawalPosted): `data.ledger_seq`,
  `data.balance`.

The answer's bytes are the text of the object ledger_move() rebuilds (its own members spaced as
json_object_agg writes them, each value's text as sent): it is what the client gets and what a retry of
the key replays, both read from idempotency_record.response_body. Frozen dataclasses, not pydantic models:
everything here was validated where it was built (pokna.ledger.posting_batch says why).

    {"version": 1, "batch": {<pokna.ledger.posting_batch>}, "wallet_id": "acct_...",
     "outbox": [{"id": "msg_...", "type": "deposit.posted", "ordering_key": "acct_...",
                 "body": {"type": ..., "timestamp": ..., "data": {..., "balance": 0, "ledger_seq": 0, ...}},
                 "occurred_at": "2026-...Z"}],
     "answer": {"key": "<Idempotency-Key>", "status": 201, "body": {..., "seq": 0, ..., "balance": 0}}}
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pokna.db.types import new_id
from pokna.ledger.posting_batch import PostingBatch
from pokna.outbox import Event

LEDGER_MOVE_VERSION = 1
"""The move's layout as ledger_move() reads it: raise both when a field or a set member changes."""


@dataclass(frozen=True, slots=True)
class Announcement:
    """A webhook_event row, its body a JSON object (ledger_move() sets `data.ledger_seq`, `data.balance`)."""

    id: str
    type: str
    ordering_key: str
    body: Mapping[str, Any]
    occurred_at: datetime

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "ordering_key": self.ordering_key,
            "body": self.body,
            "occurred_at": self.occurred_at,
        }


@dataclass
class Announcements:
    """The move's pokna.outbox.Recorder: its events kept as objects, not as text."""

    ids: Callable[[str], str] = new_id
    rows: list[Announcement] = field(default_factory=list)

    def record(self, ordering_key: str, event: Event) -> str:
        message_id = self.ids("msg")
        body = event.model_dump(mode="json")
        self.rows.append(Announcement(message_id, event.type, ordering_key, body, event.timestamp))
        return message_id


@dataclass(frozen=True, slots=True)
class LedgerMove:
    batch: PostingBatch
    wallet_id: str
    """The wallet whose balance after the move the answer and the announcements carry."""
    announcements: tuple[Announcement, ...]
    answer_key: str
    """The Idempotency-Key the answer is stored under."""
    answer_body: Mapping[str, Any]
    """The answer with stand-ins at `seq`, `prev_hash`, `hash` and `balance`."""
    answer_status: int = 201
    version: int = LEDGER_MOVE_VERSION

    def encode(self) -> str:
        """The move as ledger_move()'s argument: compact, non-ASCII as it is, so each value's text is what
        pydantic would have written of it."""
        return _ENCODER.encode(
            {
                "version": self.version,
                "batch": self.batch.as_json(),
                "wallet_id": self.wallet_id,
                "outbox": [announcement.as_json() for announcement in self.announcements],
                "answer": {"key": self.answer_key, "status": self.answer_status, "body": self.answer_body},
            }
        )


def _timestamp(value: object) -> str:
    if not isinstance(value, datetime):
        raise TypeError(f"{type(value).__name__} is not JSON serializable")
    return value.isoformat()


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_timestamp)
