"""`pokna sweep` signs every ledger head that moved since its last checkpoint, and only those."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna import ledger
from pokna.db.types import utc_now
from pokna.dealer.service import Clock
from pokna.runtime import Runtime
from support.ledger_reads import get_transaction, list_checkpoints
from support.sweeping import swept
from support.tenant_api import new_tenant


def test_sweep_checkpoints_moved_heads_only(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime
) -> None:
    clock = Clock(now=utc_now(), open_game_ttl=timedelta(minutes=10))
    busy, idle = new_tenant(client, sessions, "busy"), new_tenant(client, sessions, "idle")
    wallet = busy.wallet()
    first = busy.deposit(wallet, 10).json()

    assert swept(runtime, clock).checkpoints_taken == 1
    assert swept(runtime, clock).checkpoints_taken == 0

    second = busy.deposit(wallet, 5).json()
    assert swept(runtime, clock).checkpoints_taken == 1
    with sessions() as session:
        # Deposits go on their wallet's chain: each checkpoint signs that chain's head.
        chain = ledger.chain_for(wallet)
        assert [checkpoint.heads for checkpoint in list_checkpoints(session, busy.tenant_id)] == [
            [{"chain": chain, "seq": seq, "hash": get_transaction(session, txn).hash}]
            for seq, txn in ((2, second["id"]), (1, first["id"]))
        ]
        assert list_checkpoints(session, idle.tenant_id) == []
