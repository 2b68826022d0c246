"""One tenant's deposits and withdrawals take a free chain (issue 44): `ledger_take_chain()` hands each
writer the first of the tenant's 16 chains from its wallet's on whose head nobody holds a lock, so two of
one tenant's writers never queue behind each other's COMMIT on one chain. Held here on real PostgreSQL:
writers spread over distinct chains while they hold them, the 17th waits (never fails) for its own, and
moves whose wallets all hash to a chain someone holds all land elsewhere, every chain gap-free and every
transaction verified."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from psycopg import AsyncConnection
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

from pokna.ledger import verify_export
from pokna.ledger.accounts import system_external_id
from pokna.ledger.model import DEFAULT_CURRENCY
from pokna_verify.ledger.chain import LEDGER_CHAINS, chain_for
from support.driver import export_jsonl, open_account, reconcile
from support.ledger_reads import balance_of, system_balance
from support.money import Teller
from support.sessions import unit_of_work

pytest_plugins = ["ledger_fixtures"]

TAKE = text("SELECT ledger_take_chain(:tenant_id, CAST(:preferred AS smallint))")
WAITING = text(
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' "
    "AND query LIKE '%ledger_take_chain%'"
)
HEAD = (
    "INSERT INTO ledger_head (tenant_id, chain, last_seq, last_hash) VALUES (:t, :chain, 0, repeat('0', 64)) "
    "ON CONFLICT DO NOTHING"
)
HOLD = "SELECT last_seq FROM ledger_head WHERE tenant_id = :t AND chain = :chain FOR UPDATE"


def _take(connection: Connection, tenant_id: str, preferred: int) -> int:
    return int(connection.execute(TAKE, {"tenant_id": tenant_id, "preferred": preferred}).scalar_one())


def test_writers_holding_chains_are_spread_over_all_sixteen_and_the_next_waits_for_its_own(
    engine: Engine, tenant_id: str
) -> None:
    """Sixteen open transactions that all prefer chain 5 get the sixteen chains, 5 first and on from it; the
    seventeenth waits for chain 5's head, and takes it when its holder commits."""
    engine = create_engine(engine.url, poolclass=NullPool)  # 18 connections at once, past the pool's 15
    holders = [engine.connect() for _ in range(LEDGER_CHAINS)]
    late = engine.connect()
    try:
        assert _take(late, tenant_id, 5) == 5  # the tenant's first writer makes its 16 heads
        late.commit()
        taken = [_take(holder, tenant_id, 5) for holder in holders]
        assert taken == [(5 + offset) % LEDGER_CHAINS for offset in range(LEDGER_CHAINS)]
        got: list[int] = []
        waiter = threading.Thread(target=lambda: got.append(_take(late, tenant_id, 5)), daemon=True)
        waiter.start()
        with engine.connect() as watcher:
            for _ in range(600):  # until the seventeenth is seen waiting on a lock (bounded: 60 s)
                if watcher.execute(WAITING).scalar_one() == 1:
                    break
                watcher.execute(text("SELECT pg_sleep(0.1)"))
                watcher.rollback()  # pg_stat_activity is read once a transaction: the next look is afresh
            else:
                raise AssertionError("the seventeenth writer never waited")
        assert got == []
        holders[0].commit()  # chain 5's holder
        waiter.join(60)
        assert got == [5]
        holders[1].commit()  # chain 6 free again: a writer preferring 5 skips 5 (held) and takes it
        assert _take(holders[1], tenant_id, 5) == 6
    finally:
        for connection in (*holders, late):
            connection.close()
        engine.dispose()
    with engine.connect() as connection:
        heads = connection.execute(
            text("SELECT chain, last_seq FROM ledger_head WHERE tenant_id = :t ORDER BY chain"),
            {"t": tenant_id},
        ).all()
    assert [tuple(head) for head in heads] == [(chain, 0) for chain in range(LEDGER_CHAINS)]


def test_an_unknown_tenant_gets_its_preferred_chain_and_no_head(engine: Engine) -> None:
    with engine.connect() as connection:
        assert _take(connection, "ten_nobody", 3) == 3
        assert (
            connection.execute(
                text("SELECT count(*) FROM ledger_head WHERE tenant_id = 'ten_nobody'")
            ).scalar()
            == 0
        )


@pytest.mark.citus  # ledger_take_chain() delegated to the tenant's worker, in the move's transaction
def test_a_tenants_moves_all_land_on_free_chains_while_their_wallets_chain_is_held(
    sessions: sessionmaker[Session], engine: Engine, teller: Teller
) -> None:
    """Eight clients move money at once in and out of eight wallets whose own chain is the same one, while
    another transaction holds that chain's head throughout: before issue 44 each of them waited for it
    (here: past the lock timeout, and failed); now every move posts on another chain, against that
    chain's funding sub-account, and every chain stays gap-free, hash-linked and balanced."""
    clients, rounds = 8, 12
    by_chain: dict[int, list[str]] = {}
    with unit_of_work(sessions) as session:
        while not any(len(found) == clients for found in by_chain.values()):
            wallet = open_account(session, tenant_id=teller.tenant_id, kind="player_wallet").id
            by_chain.setdefault(chain_for(wallet), []).append(wallet)
    held, wallets = next((chain, found) for chain, found in by_chain.items() if len(found) == clients)

    async def moves(index: int, connection: AsyncConnection[Any]) -> list[int]:
        await connection.execute("SET lock_timeout = '10s'")
        chains = []
        for step in range(rounds):
            answer = await teller.deposit(wallets[index], 10 + step, connection=connection)
            chains.append(int(answer["chain"]))
            if step % 3 == 2:
                answer = await teller.withdraw(wallets[index], 5, connection=connection)
                chains.append(int(answer["chain"]))
        return chains

    async def together() -> list[list[int]]:
        barrier = asyncio.Barrier(clients)

        async def client(index: int) -> list[int]:
            async with teller.database.connection() as connection:
                await barrier.wait()
                return await moves(index, connection)

        return list(await asyncio.wait_for(asyncio.gather(*(client(i) for i in range(clients))), 120))

    with engine.connect() as holder:  # held as ledger_post() holds a head, without the new function
        holder.execute(text(HEAD), {"t": teller.tenant_id, "chain": held})
        holder.commit()
        holder.execute(text(HOLD), {"t": teller.tenant_id, "chain": held})
        chains = [chain for found in teller.run(together()) for chain in found]
        holder.rollback()
    assert len(chains) == clients * (rounds + rounds // 3)
    assert held not in chains
    assert len(set(chains)) > 1  # spread, not queued behind one another on the next chain
    deposited = clients * sum(10 + step for step in range(rounds)) - clients * (rounds // 3) * 5
    with unit_of_work(sessions) as session:
        assert sum(balance_of(session, wallet) for wallet in wallets) == deposited
        assert system_balance(session, teller.tenant_id, "external_funding") == -deposited
        assert reconcile(session, teller.tenant_id, check_chain=True).ok
        report = verify_export(export_jsonl(session, teller.tenant_id))
    assert report.valid, report.findings
    assert report.transactions == len(chains)
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT t.chain, array_agg(t.seq ORDER BY t.seq), array_agg(DISTINCT a.external_id) "
                "FROM journal_transaction t JOIN posting p ON p.tenant_id = t.tenant_id "
                "AND p.transaction_id = t.id JOIN account a ON a.tenant_id = p.tenant_id AND a.id = p.account_id "
                "AND a.kind = 'external_funding' WHERE t.tenant_id = :t GROUP BY t.chain"
            ),
            {"t": teller.tenant_id},
        ).all()
    for chain, seqs, funding in rows:
        assert seqs == list(range(1, len(seqs) + 1)), f"chain {chain}: {seqs}"
        assert funding == [system_external_id(DEFAULT_CURRENCY, chain)]  # the chain's own sub-account
