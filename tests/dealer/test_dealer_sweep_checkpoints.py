"""`pokna sweep` signs every ledger head that moved since its last checkpoint, and only those."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from pokna import ledger
from pokna.db.types import utc_now
from pokna.dealer.service import Clock
from pokna.ledger.checkpoint import list_checkpoints
from pokna.ledger.model import AccountKind
from pokna.runtime import Runtime
from pokna.sweep import sweep
from pokna.tenants.service import create_tenant


def test_sweep_checkpoints_moved_heads_only(sessions: sessionmaker[Session], runtime: Runtime) -> None:
    clock = Clock(now=utc_now(), open_game_ttl=timedelta(minutes=10))
    with sessions.begin() as session:
        busy, idle = create_tenant(session, "busy").id, create_tenant(session, "idle").id
        wallet = ledger.open_account(session, tenant_id=busy, kind=AccountKind.PLAYER_WALLET)
        first = ledger.deposit(session, tenant_id=busy, account_id=wallet.id, amount=10)

    assert sweep(sessions, runtime.keys, clock).checkpoints_taken == 1
    assert sweep(sessions, runtime.keys, clock).checkpoints_taken == 0

    with sessions.begin() as session:
        second = ledger.deposit(session, tenant_id=busy, account_id=wallet.id, amount=5)
    assert sweep(sessions, runtime.keys, clock).checkpoints_taken == 1
    with sessions() as session:
        # Deposits go on their wallet's chain: each checkpoint signs that chain's head.
        chain = ledger.chain_for(wallet.id)
        assert [checkpoint.heads for checkpoint in list_checkpoints(session, busy)] == [
            [{"chain": chain, "seq": seq, "hash": ledger.get_transaction(session, txn).hash}]
            for seq, txn in ((2, second.id), (1, first.id))
        ]
        assert list_checkpoints(session, idle) == []
