"""The transactional outbox: an event is written in the same transaction as the change it describes.

`record` is the one way an event is emitted, called from one place per kind (the dealer's
`announcements`, the ledger's funding transfers). It only inserts a row: nothing is sent from inside a
business transaction, so a rolled-back action emits nothing and a committed one always has its event.
The webhooks worker (pokna.webhooks) fans the rows out to endpoints and sends them, later and elsewhere.
"""

from __future__ import annotations

from typing import Protocol

from sqlalchemy.orm import Session

from pokna.db.models.webhook import WebhookEvent
from pokna.db.types import new_id
from pokna.outbox.events import EVENT_MODELS, EVENT_TYPES, Event, EventType

__all__ = [
    "EVENT_MODELS",
    "EVENT_TYPES",
    "Event",
    "EventType",
    "Gathered",
    "Recorder",
    "SessionOutbox",
    "record",
]


class Recorder(Protocol):
    """Where a domain records its events: the session's outbox (`SessionOutbox`), or the writes a game
    request gathers for one call (pokna.dealer.writes.GameWrites), which insert the same rows."""

    def record(self, tenant_id: str, ordering_key: str, event: Event) -> str: ...


class SessionOutbox:
    def __init__(self, session: Session) -> None:
        self.session = session

    def record(self, tenant_id: str, ordering_key: str, event: Event) -> str:
        return record(self.session, tenant_id, ordering_key, event)


def record(session: Session, tenant_id: str, ordering_key: str, event: Event) -> str:
    """Write `event` to the outbox in the caller's transaction; its message id (`msg_...`).

    Events of one `ordering_key` (a game, an account) are delivered in the order they were recorded; the
    caller holds that key's lock while recording, so record order is commit order."""
    row = WebhookEvent(
        id=new_id("msg"),
        tenant_id=tenant_id,
        type=event.type,
        ordering_key=ordering_key,
        body=event.model_dump_json(),
        occurred_at=event.timestamp,
        dispatched_at=None,
    )
    session.add(row)
    return row.id


class Gathered:
    """Events gathered as webhook_event rows, for a request that writes them with its change in one call
    (game_write(), ledger_move()): the same rows `record` inserts."""

    def __init__(self) -> None:
        self.rows: list[dict[str, object]] = []

    def record(self, tenant_id: str, ordering_key: str, event: Event) -> str:
        message_id = new_id("msg")
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
