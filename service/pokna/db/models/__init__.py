"""Every table, imported here so Alembic's autogenerate and `alembic check` see the whole schema."""

from pokna.db.models.game import Game, GameEvent, GameLink, GameRoll, GameSeat, GameTable
from pokna.db.models.game_log import GameLog, GameLogCheckpoint, GameLogLeaf, GameLogNode
from pokna.db.models.idempotency import IdempotencyRecord
from pokna.db.models.ledger import Account, JournalPosting, JournalTransaction, LedgerCheckpoint, LedgerHead
from pokna.db.models.tenant import ApiKey, Tenant
from pokna.db.models.webhook import WebhookDelivery, WebhookEndpoint, WebhookEvent

__all__ = [
    "Account",
    "ApiKey",
    "Game",
    "GameEvent",
    "GameLink",
    "GameLog",
    "GameLogCheckpoint",
    "GameLogLeaf",
    "GameLogNode",
    "GameRoll",
    "GameSeat",
    "GameTable",
    "IdempotencyRecord",
    "JournalPosting",
    "JournalTransaction",
    "LedgerCheckpoint",
    "LedgerHead",
    "Tenant",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WebhookEvent",
]
