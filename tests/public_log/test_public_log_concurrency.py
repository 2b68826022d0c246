"""Games end while the sequencer takes checkpoints, on a real PostgreSQL: every finished game is in exactly
one leaf, none lost or doubled, and no checkpoint's ledger heads run ahead of its games ("every game whose
money ends at or before these heads is in this tree", what an auditor checks a bundle by). The sequencer's
passes run in two threads of their own (two workers, which take the log in turn), with a small batch so that full batches (which sign older heads) and
drained ones both happen while games are ending."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.game import Game as GameRow
from pokna.db.models.ledger import JournalPosting, JournalTransaction
from pokna.public_log.sequencer import LogSigner
from pokna.runtime import Runtime
from pokna_verify.tlog.checkpoint import parse_checkpoint
from pokna_verify.tlog.game_leaf import game_leaf_entry
from pokna_verify.tlog.tree import appended_nodes, root_hash
from support.game_logs import ORIGIN_PREFIX, checkpoint_notes, logged_leaves, open_table, sequence_all

GAMES = 16
SEQUENCERS = 2


def last_transfers(
    sessions: sessionmaker[Session], tenant_id: str, games: list[str]
) -> dict[str, tuple[int, int]]:
    """Each game's last journal transaction, (chain, seq), found by its pot account; none for a game
    cancelled before it moved money."""
    with sessions() as session:
        found = session.execute(select(GameRow.pot_account_id, GameRow.id).where(GameRow.id.in_(games)))
        pots = {str(pot): str(game_id) for pot, game_id in found.all()}
        rows = session.execute(
            select(JournalPosting.account_id, JournalTransaction.chain, JournalTransaction.seq)
            .join(
                JournalTransaction,
                (JournalTransaction.id == JournalPosting.transaction_id)
                & (JournalTransaction.tenant_id == JournalPosting.tenant_id),
            )
            .where(JournalPosting.tenant_id == tenant_id, JournalPosting.account_id.in_(pots))
        ).all()
        last: dict[str, tuple[int, int]] = {}
        for pot, chain, seq in rows:
            game = pots[pot]
            last[game] = max(last.get(game, (chain, seq)), (chain, seq))
        return last


def test_games_ending_during_checkpoints_are_each_logged_once_and_under_their_heads(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    table = open_table(client, sessions)
    signer = LogSigner(ORIGIN_PREFIX, runtime.keys.signing_key)
    stop = threading.Event()
    failures: list[BaseException] = []
    passes = [0]
    lock = threading.Lock()

    def sequencer() -> None:
        try:
            while not stop.is_set():
                sequence_all(runtime.aio, signer, batch=3)
                with lock:
                    passes[0] += 1
        except BaseException as error:  # the main thread reports it
            failures.append(error)

    threads = [threading.Thread(target=sequencer) for _ in range(SEQUENCERS)]
    for thread in threads:
        thread.start()
    try:
        games = table.finish_games(GAMES, cancel_every=5)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    assert not failures, failures
    assert not any(thread.is_alive() for thread in threads)
    assert passes[0] > 1, "the sequencer ran while the games were ending"
    while sequence_all(runtime.aio, signer, batch=3):
        pass

    leaves = logged_leaves(sessions, table.tenant_id)
    assert [index for index, _, _ in leaves] == list(range(GAMES))
    assert sorted(game_id for _, game_id, _ in leaves) == sorted(games)  # each once: none lost, none doubled
    with sessions() as session:
        rows = {row.id: row for row in session.scalars(select(GameRow).where(GameRow.id.in_(games)))}
    entries = []
    for _, game_id, _ in leaves:
        row = rows[game_id]
        assert row.proof is not None
        entries.append(game_leaf_entry(row.proof, status=row.status, pot_account_id=row.pot_account_id))
    assert [entry.decode() for entry in entries] == [entry for _, _, entry in leaves]
    nodes = appended_nodes(0, entries, {})
    leaf_of = {game_id: index for index, game_id, _ in leaves}
    money = last_transfers(sessions, table.tenant_id, games)
    assert len(money) > GAMES // 2, "most games moved money: their heads are checked"
    notes = checkpoint_notes(sessions, table.tenant_id)
    assert max(notes) == GAMES
    for size, note in sorted(notes.items()):
        checkpoint = parse_checkpoint(note.split("\n\n", 1)[0] + "\n")
        assert checkpoint.root_hash == root_hash(size, nodes), f"checkpoint {size} is of another tree"
        heads = checkpoint.ledger_heads
        for game_id, (chain, seq) in money.items():
            if seq <= heads.get(chain, (0, ""))[0]:
                assert leaf_of[game_id] < size, (
                    f"checkpoint {size}'s heads hold game {game_id}'s money ({chain}, {seq}), not its leaf"
                )
