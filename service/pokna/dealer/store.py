"""Where games are kept: the one interface the dealer's services read and write games and tables through.

Implemented by pokna.dealer.store_postgres (the statements every action runs under the game's lock, one
round trip each) on pokna.dealer.game_queries (the plain reads, pages and tables); `game_store` hands
out its one instance.

Every game query lives behind this interface. Games, seats, rolls and events travel as plain records
(pokna.dealer.records); tables are ORM objects, touched once per round. Another domain's tables are
read only through that domain's public functions (wallets and balances: pokna.ledger.accounts_aio's ACCOUNT_SUMMARIES).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sqlalchemy.orm import Session

from pokna.dealer.records import GameRecord
from pokna.dealer.store_postgres import PostgresGameStore


class GameStore(Protocol):
    """A game's persistence. Stateless: one instance serves every session of its engine."""

    def games_by_ids(self, session: Session, tenant_id: str, game_ids: Sequence[str]) -> list[GameRecord]:
        """The tenant's games among `game_ids`, in one query; another tenant's are absent."""
        ...


_GAME_STORE: GameStore = PostgresGameStore()


def game_store(session: Session) -> GameStore:
    """The one game store: stateless, so one instance serves every session (PostgreSQL is the only
    database)."""
    return _GAME_STORE
