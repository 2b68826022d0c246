"""The transactional outbox: an event is written in the same transaction as the change it describes.

An event is recorded from one place per kind (the dealer's `announcements`, the ledger's funding
transfers) into a `Recorder` (`Gathered`; a deposit's pokna.ledger.move_document.Announcements), whose
rows the change's one call writes with it: `game_write()` for a game, `ledger_move()` for a deposit or
withdrawal (their SQL is in service/pokna/sql/). Only a row is written: nothing is sent from inside a
business transaction, so a rolled-back action emits nothing and a committed one always has its event. The
webhooks worker (pokna.webhooks) fans the rows out to endpoints and sends them, later and elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pokna.db.types import new_id
from pokna.outbox.events import EVENT_MODELS, EVENT_TYPES, Event

__all__ = ["EVENT_MODELS", "EVENT_TYPES", "Event", "Gathered", "Recorder"]


class Recorder(Protocol):
    """Where a domain records its events: `Gathered`, or the writes a game request gathers for one call
    (pokna.dealer.writes.GameWrites), which hold the same rows."""

    def record(self, ordering_key: str, event: Event) -> str: ...


class Gathered:
    """Events gathered as webhook_event rows, for a game request that writes them with its change in one
    call (game_write(); a deposit's are pokna.ledger.move_document.Announcements)."""

    def __init__(self, ids: Callable[[str], str] = new_id) -> None:
        """`ids`: where message ids come from (a game decision's own: pokna.dealer.action.locked.Env)."""
        self.rows: list[dict[str, object]] = []
        self._ids = ids

    def record(self, ordering_key: str, event: Event) -> str:
        message_id = self._ids("msg")
        self.rows.append(
            {
                "id": message_id,
                "type": event.type,
                "ordering_key": ordering_key,
                "body": event.model_dump_json(),
                "occurred_at": event.timestamp,
            }
        )
        return message_id
