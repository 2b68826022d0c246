"""The sequencer appends every finished game, settled or cancelled, once, oldest first, and signs each
new size; what it stored is checked from scratch: the entries rebuilt from the games' proofs, the root
recomputed by pymerkle, each checkpoint opened as a signed note under the service's key, consecutive
checkpoints joined by consistency proofs and every game's inclusion proven from the stored nodes."""

from __future__ import annotations

import asyncio
import threading

import pytest
from fastapi.testclient import TestClient
from pymerkle import InmemoryTree
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.aio import AsyncDatabase
from pokna.db.models.game import Game as GameRow
from pokna.public_log import reads
from pokna.public_log.sequencer import LogSigner
from pokna.public_log.worker import run_sequencer
from pokna.runtime import Runtime
from pokna_verify.tlog.checkpoint import parse_checkpoint
from pokna_verify.tlog.game_leaf import game_leaf_entry
from pokna_verify.tlog.hashing import leaf_hash
from pokna_verify.tlog.note import NoteVerifier, open_note
from pokna_verify.tlog.tree import Node, consistency_ranges, inclusion_ranges, nodes_for, proof_hashes
from pokna_verify.tlog.verify import verify_consistency, verify_inclusion
from support.driver import read_heads
from support.game_logs import (
    ORIGIN_PREFIX,
    checkpoint_notes,
    logged_leaves,
    open_table,
    sequence_all,
    unlogged,
)


def signer_of(runtime: Runtime) -> LogSigner:
    return LogSigner(ORIGIN_PREFIX, runtime.keys.signing_key)


def test_every_finished_game_is_logged_once_and_the_log_checks_out(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    table = open_table(client, sessions)
    games = table.finish_games(7, cancel_every=3)
    signer = signer_of(runtime)
    assert sequence_all(runtime.aio, signer, batch=4) == 4
    assert sequence_all(runtime.aio, signer, batch=4) == 3
    assert sequence_all(runtime.aio, signer, batch=4) == 0

    leaves = logged_leaves(sessions, table.tenant_id)
    assert [index for index, _, _ in leaves] == list(range(7))
    assert sorted(game_id for _, game_id, _ in leaves) == sorted(games)
    with sessions() as session:
        rows = {row.id: row for row in session.scalars(select(GameRow).where(GameRow.id.in_(games)))}
        heads = read_heads(session, table.tenant_id)
    assert {rows[game_id].status for game_id in games} == {"settled", "cancelled"}
    for index, game_id, entry in leaves:
        row = rows[game_id]
        assert row.log_index == index
        assert row.proof is not None
        assert entry.encode() == game_leaf_entry(
            row.proof, status=row.status, pot_account_id=row.pot_account_id
        )

    theirs = InmemoryTree(algorithm="sha256")
    for _, _, entry in leaves:
        theirs.append_entry(entry.encode())
    origin = f"{ORIGIN_PREFIX}/{table.tenant_id}"
    verifier = NoteVerifier(origin, runtime.keys.signing_key.public_key())
    notes = checkpoint_notes(sessions, table.tenant_id)
    assert sorted(notes) == [4, 7]
    checkpoints = {size: parse_checkpoint(open_note(note, [verifier]).text) for size, note in notes.items()}
    for size, checkpoint in checkpoints.items():
        assert (checkpoint.origin, checkpoint.size) == (origin, size)
        assert checkpoint.root_hash == theirs.get_root(size)
    assert checkpoints[7].ledger_heads == {chain: head for chain, head in heads.items() if head[0]}

    async def nodes(wanted: set[Node]) -> dict[Node, bytes]:
        async with runtime.aio.connection() as connection:
            return await reads.read_nodes(connection, table.tenant_id, wanted)

    stored = asyncio.run(nodes(nodes_for(consistency_ranges(4, 7))))
    verify_consistency(
        4,
        7,
        checkpoints[4].root_hash,
        checkpoints[7].root_hash,
        proof_hashes(consistency_ranges(4, 7), stored),
    )
    for index, _, entry in leaves:
        ranges = inclusion_ranges(index, 7)
        path = proof_hashes(ranges, asyncio.run(nodes(nodes_for(ranges))))
        verify_inclusion(leaf_hash(entry.encode()), index, 7, path, checkpoints[7].root_hash)


def test_a_game_waits_at_most_one_pass_and_a_backlog_drains_oldest_first(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    """The merge delay: every game finished before a pass is logged by it while no more than `batch`
    wait; past that, each pass logs the `batch` that ended first, so no game waits behind newer ones."""
    table = open_table(client, sessions)
    signer = signer_of(runtime)
    table.finish_games(3)
    sequence_all(runtime.aio, signer, batch=3)
    assert unlogged(sessions, table.tenant_id) == []

    table.finish_games(5)
    waiting = unlogged(sessions, table.tenant_id)
    assert len(waiting) == 5
    sequence_all(runtime.aio, signer, batch=2)
    assert unlogged(sessions, table.tenant_id) == waiting[2:]
    sequence_all(runtime.aio, signer, batch=2)
    assert unlogged(sessions, table.tenant_id) == waiting[4:]
    sequence_all(runtime.aio, signer, batch=2)
    assert unlogged(sessions, table.tenant_id) == []
    assert [game_id for _, game_id, _ in logged_leaves(sessions, table.tenant_id)][3:] == waiting


def test_tenants_have_logs_of_their_own(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    first, second = open_table(client, sessions, "Mos Espa"), open_table(client, sessions, "Anchorhead")
    first.finish_games(2)
    second.finish_games(1)
    assert sequence_all(runtime.aio, signer_of(runtime)) == 3
    assert [index for index, _, _ in logged_leaves(sessions, first.tenant_id)] == [0, 1]
    assert [index for index, _, _ in logged_leaves(sessions, second.tenant_id)] == [0]


@pytest.mark.parametrize("sequencers", [4])
def test_several_sequencers_at_once_give_each_game_one_leaf(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, sequencers: int
) -> None:
    table = open_table(client, sessions)
    games = table.finish_games(12)
    signer = signer_of(runtime)
    start = threading.Barrier(sequencers)
    failures: list[BaseException] = []
    appended = [0]
    lock = threading.Lock()

    def sequencer() -> None:
        """Passes of one game each until every game is logged, then a few more that find nothing to add.
        A pass that finds the log taken by another (SKIP LOCKED) adds nothing: 30 passes each, a fixed
        number, were used up before the twelfth game was logged when an adding pass was slow beside the
        skipping ones (about 50 of the 120 passes were needed here, under no other load)."""
        try:
            start.wait(timeout=60)
            after = 0
            for _ in range(1_000):
                added = sequence_all(runtime.aio, signer, batch=1)
                with lock:
                    appended[0] += added
                    done = appended[0] >= len(games)
                after += 1 if done else 0
                if after > 5:
                    return
        except BaseException as error:  # the main thread reports it
            failures.append(error)

    threads = [threading.Thread(target=sequencer) for _ in range(sequencers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failures, failures
    assert not any(thread.is_alive() for thread in threads)
    leaves = logged_leaves(sessions, table.tenant_id)
    assert [index for index, _, _ in leaves] == list(range(12))
    assert sorted(game_id for _, game_id, _ in leaves) == sorted(games)
    assert sorted(checkpoint_notes(sessions, table.tenant_id)) == list(range(1, 13))


def test_the_running_sequencer_outlives_its_connection(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, engine: Engine
) -> None:
    """A pass whose connection the server ended (a restart, a failover) is logged and the next pass
    connects again: the worker never dies of it."""
    table = open_table(client, sessions)
    games = table.finish_games(2)
    name = "pokna-sequencer-under-test"
    ended: list[int] = []
    asked = 0

    def should_stop() -> bool:
        nonlocal asked
        asked += 1
        logged = len(logged_leaves(sessions, table.tenant_id))
        if logged == 1 and not ended:  # after the first pass: end the sequencer's connection
            with engine.connect() as connection:
                ended.extend(
                    connection.execute(
                        text(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = :name"
                        ),
                        {"name": name},
                    ).scalars()
                )
        return logged == 2 or asked > 400  # a bound: the test stops by itself whatever happens

    database = AsyncDatabase(f"{runtime.conninfo} application_name={name}", 1, 1, 5.0)

    async def sequencing() -> int:
        async with database.opened():  # as `pokna log sequence` runs it: one pool for the process
            return await run_sequencer(database, signer_of(runtime), should_stop, 0.05, batch=1)

    appended = asyncio.run(sequencing())
    assert ended == [True]
    assert appended == 2
    assert [game_id for _, game_id, _ in logged_leaves(sessions, table.tenant_id)] == games
