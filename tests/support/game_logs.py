"""Finished games to log, and the log read back and checked from scratch with pokna_verify.tlog alone."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.aio import AsyncDatabase
from pokna.db.models.game import Game as GameRow
from pokna.db.models.game_log import GameLogCheckpoint, GameLogLeaf
from pokna.db.models.ledger import Account
from pokna.public_log.sequencer import BATCH, LogSigner
from pokna.public_log.worker import sequence_once
from support.game_play import Api, new_tenant_key, obliging, play

ORIGIN_PREFIX = "pokna.test/games"


def sequence_all(database: AsyncDatabase, signer: LogSigner, batch: int = BATCH) -> int:
    """One pass of the sequencer (pokna.public_log.worker.sequence_once) from synchronous code, in an
    event loop of its own: how many games it appended."""
    return asyncio.run(sequence_once(database, signer, batch=batch))


@dataclass
class Table:
    api: Api
    tenant_id: str
    wallets: list[str]

    def finish_games(self, count: int, *, cancel_every: int = 0) -> list[str]:
        """`count` games played to their end (every `cancel_every`-th cancelled before its start)."""
        ids = []
        for number in range(count):
            game = self.api.create_game(self.wallets[0], self.wallets[1:3], stake=2)
            if cancel_every and number % cancel_every == 0:
                game = self.api.ok(self.api.act(game["id"], {"type": "cancel"}))
            else:
                game = play([self.api], game, obliging)
            assert game["status"] in ("settled", "cancelled")
            ids.append(game["id"])
        return ids


def open_table(client: TestClient, sessions: sessionmaker[Session], name: str = "Mos Espa") -> Table:
    api = Api(client, new_tenant_key(sessions, name))
    wallets = [api.wallet(1_000) for _ in range(3)]
    with sessions() as session:
        tenant_id = session.scalar(select(Account.tenant_id).where(Account.id == wallets[0]))
    assert tenant_id is not None
    return Table(api, tenant_id, wallets)


def logged_leaves(sessions: sessionmaker[Session], tenant_id: str) -> list[tuple[int, str, str]]:
    with sessions() as session:
        rows = session.execute(
            select(GameLogLeaf.leaf_index, GameLogLeaf.game_id, GameLogLeaf.entry)
            .where(GameLogLeaf.tenant_id == tenant_id)
            .order_by(GameLogLeaf.leaf_index)
        )
        return [(row.leaf_index, row.game_id, row.entry) for row in rows]


def checkpoint_notes(sessions: sessionmaker[Session], tenant_id: str) -> dict[int, str]:
    with sessions() as session:
        rows = session.execute(
            select(GameLogCheckpoint.tree_size, GameLogCheckpoint.note).where(
                GameLogCheckpoint.tenant_id == tenant_id
            )
        )
        return {row.tree_size: row.note for row in rows}


def unlogged(sessions: sessionmaker[Session], tenant_id: str) -> list[str]:
    with sessions() as session:
        return list(
            session.scalars(
                select(GameRow.id)
                .where(GameRow.tenant_id == tenant_id, GameRow.log_index.is_(None))
                .order_by(GameRow.ended_at, GameRow.id)
            )
        )
