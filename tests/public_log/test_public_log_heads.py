"""A checkpoint's ledger heads never run ahead of its games: an auditor reads them as "every game whose money
ends at or before these heads is in this tree" (docs/audit.md, "The public log"). A pass that may leave a
backlog (a full batch) signs the heads of the last pass that left none; the next pass that drains signs
the heads it read before its games."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.public_log.sequencer import LogSigner
from pokna.runtime import Runtime
from pokna_verify.tlog.checkpoint import ledger_head_lines, parse_checkpoint
from support.driver import read_heads
from support.game_logs import ORIGIN_PREFIX, checkpoint_notes, open_table, sequence_all


def _extensions(note: str) -> tuple[str, ...]:
    return parse_checkpoint(note.split("\n\n", 1)[0] + "\n").extensions


def test_a_pass_that_leaves_games_waiting_signs_no_heads_ahead_of_its_games(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    table = open_table(client, sessions)
    signer = LogSigner(ORIGIN_PREFIX, runtime.keys.signing_key)
    table.finish_games(2)
    assert sequence_all(runtime.aio, signer, batch=4) == 2  # drained: the heads of now
    with sessions() as session:
        drained = ledger_head_lines(read_heads(session, table.tenant_id))
    assert _extensions(checkpoint_notes(sessions, table.tenant_id)[2]) == drained

    table.finish_games(5)
    assert (
        sequence_all(runtime.aio, signer, batch=4) == 4
    )  # three left waiting: the heads stay where they were
    assert _extensions(checkpoint_notes(sessions, table.tenant_id)[6]) == drained
    assert sequence_all(runtime.aio, signer, batch=4) == 1  # drained again: the heads of now
    with sessions() as session:
        now = ledger_head_lines(read_heads(session, table.tenant_id))
    assert now != drained
    assert _extensions(checkpoint_notes(sessions, table.tenant_id)[7]) == now
