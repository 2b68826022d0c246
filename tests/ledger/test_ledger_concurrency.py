"""Real concurrency on PostgreSQL: threads, each with its own connection and unit of work."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import make_engine, make_sessionmaker, unit_of_work
from pokna.db.models.ledger import JournalTransaction
from pokna.ledger import (
    AccountTransfer,
    IdempotencyKeyReused,
    InsufficientFunds,
    balance_of,
    deposit,
    export_jsonl,
    open_account,
    post_transfers,
    reconcile,
    verify_export,
    withdraw,
)
from pokna.ledger.chain import chain_for
from pokna.ledger.errors import BalancesChanged

pytest_plugins = ["ledger_fixtures"]

THREADS = 8
T = TypeVar("T")


@pytest.fixture
def pool_sessions(database_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(database_url, pool_size=THREADS * 3, max_overflow=0)
    yield make_sessionmaker(engine)
    engine.dispose()


def _together(count: int, work: Callable[[int], T]) -> list[T]:
    """Run `work(i)` for i in range(count) on `count` threads released at the same instant."""
    barrier = threading.Barrier(count)

    def run(index: int) -> T:
        barrier.wait(timeout=30)
        return work(index)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(run, range(count)))


def _wallet(sessions: sessionmaker[Session], tenant_id: str, name: str, funds: int) -> str:
    with unit_of_work(sessions) as session:
        wallet = open_account(session, tenant_id=tenant_id, kind="player_wallet", external_id=name).id
        if funds:
            deposit(session, tenant_id=tenant_id, account_id=wallet, amount=funds)
    return wallet


def _seqs(engine: Engine, tenant_id: str) -> list[int]:
    """1..n: how many transactions the tenant has, once every one of its chains is seen to count 1, 2, 3 ...
    with no gap (each chain's seqs are its own)."""
    with engine.connect() as connection:
        rows = connection.execute(
            select(JournalTransaction.chain, JournalTransaction.seq)
            .where(JournalTransaction.tenant_id == tenant_id)
            .order_by(JournalTransaction.chain, JournalTransaction.seq)
        ).all()
    by_chain: dict[int, list[int]] = {}
    for chain, seq in rows:
        by_chain.setdefault(chain, []).append(seq)
    for chain, seqs in by_chain.items():
        assert seqs == list(range(1, len(seqs) + 1)), f"chain {chain}: {seqs}"
    return list(range(1, len(rows) + 1))


def test_concurrent_debits_never_overdraw(
    pool_sessions: sessionmaker[Session], engine: Engine, tenant_id: str
) -> None:
    wallet = _wallet(pool_sessions, tenant_id, "sabacc", 1000)
    attempts, amount = 24, 70

    def debit(_index: int) -> bool:
        try:
            with unit_of_work(pool_sessions) as session:
                withdraw(session, tenant_id=tenant_id, account_id=wallet, amount=amount)
        except InsufficientFunds:
            return False
        return True

    outcomes = _together(attempts, debit)
    assert sum(outcomes) == 1000 // amount == 14
    with unit_of_work(pool_sessions) as session:
        assert balance_of(session, wallet) == 1000 - 14 * amount
        assert reconcile(session, tenant_id).ok
    assert _seqs(engine, tenant_id) == list(range(1, 16))


def test_transfers_in_opposite_orders_never_deadlock(
    pool_sessions: sessionmaker[Session], engine: Engine, tenant_id: str
) -> None:
    left = _wallet(pool_sessions, tenant_id, "left", 10_000)
    right = _wallet(pool_sessions, tenant_id, "right", 10_000)
    rounds = 25

    def shuffle(index: int) -> int:
        payer, payee = (left, right) if index % 2 else (right, left)
        for step in range(rounds):
            with unit_of_work(pool_sessions) as session:
                # Two moves in one unit of work, in opposite directions, to stress lock ordering further.
                post_transfers(
                    session,
                    tenant_id=tenant_id,
                    transfers=[
                        AccountTransfer("ante", payer, payee, 1 + step % 3),
                        AccountTransfer("payout", payee, payer, 1),
                    ],
                )
        return rounds

    assert sum(_together(THREADS, shuffle)) == THREADS * rounds
    with unit_of_work(pool_sessions) as session:
        assert balance_of(session, left) + balance_of(session, right) == 20_000
        assert reconcile(session, tenant_id).ok
    with engine.connect() as connection:
        assert connection.execute(text("SELECT sum(balance) FROM account")).scalar() == 0
    assert _seqs(engine, tenant_id) == list(range(1, 2 + 2 * THREADS * rounds + 1))


def test_concurrent_posts_keep_every_tenant_chain_gap_free_and_unbroken(
    pool_sessions: sessionmaker[Session], engine: Engine, make_tenant: Callable[[], str]
) -> None:
    tenants = [make_tenant(), make_tenant()]
    wallets = {tenant: [_wallet(pool_sessions, tenant, f"w{i}", 500) for i in range(3)] for tenant in tenants}
    posts = 30

    def churn(index: int) -> None:
        rng = random.Random(index)
        for _ in range(posts):
            tenant = rng.choice(tenants)
            payer, payee = rng.sample(wallets[tenant], 2)
            try:
                with unit_of_work(pool_sessions) as session:
                    post_transfers(  # eight "games": their transfers spread over several chains
                        session,
                        tenant_id=tenant,
                        transfers=[AccountTransfer("ante", payer, payee, rng.randint(1, 40))],
                        reference=f"game-{rng.randrange(8)}",
                    )
            except InsufficientFunds:
                pass

    _together(THREADS, churn)
    assert len({chain_for(f"game-{index}") for index in range(8)}) > 2
    for tenant in tenants:
        seqs = _seqs(engine, tenant)
        with unit_of_work(pool_sessions) as session:
            report = verify_export(export_jsonl(session, tenant))
            balances = {wallet: balance_of(session, wallet) for wallet in wallets[tenant]}
        assert report.valid, report.findings
        assert report.transactions == len(seqs)
        assert {wallet: report.balances[wallet] for wallet in wallets[tenant]} == balances
        assert sum(balances.values()) == 1500


def test_parallel_idempotent_retries_post_once(
    pool_sessions: sessionmaker[Session], engine: Engine, tenant_id: str
) -> None:
    wallet = _wallet(pool_sessions, tenant_id, "retry", 0)

    def retry(_index: int) -> str:
        with unit_of_work(pool_sessions) as session:
            posted = deposit(
                session,
                tenant_id=tenant_id,
                account_id=wallet,
                amount=250,
                idempotency_key="dep-42",
                request_hash="h",
            )
            return posted.id

    ids = _together(THREADS, retry)
    assert len(set(ids)) == 1
    with unit_of_work(pool_sessions) as session:
        assert balance_of(session, wallet) == 250
    assert _seqs(engine, tenant_id) == [1]


def test_parallel_requests_under_one_key_post_exactly_one(
    pool_sessions: sessionmaker[Session], engine: Engine, tenant_id: str
) -> None:
    """Each request waits for the head, then sees the key the previous holder committed: one posts, every
    other is told the key was used for a different request."""
    payer = _wallet(pool_sessions, tenant_id, "payer", 1000)
    payee = _wallet(pool_sessions, tenant_id, "payee", 0)

    def request(index: int) -> str:
        try:
            with unit_of_work(pool_sessions) as session:
                posted = post_transfers(
                    session,
                    tenant_id=tenant_id,
                    transfers=[
                        AccountTransfer("ante", payer, payee, 1 + index),
                        AccountTransfer("payout", payee, payer, 1),
                    ],
                    idempotency_key="round-7",
                    request_hash=f"request-{index}",
                )
                return posted[0].request_hash or ""
        except IdempotencyKeyReused:
            return "refused"

    outcomes = _together(THREADS, request)
    winners = [outcome for outcome in outcomes if outcome != "refused"]
    assert len(winners) == 1
    winner = int(winners[0].removeprefix("request-"))
    with unit_of_work(pool_sessions) as session:
        assert balance_of(session, payee) == winner
        assert reconcile(session, tenant_id).ok
    assert _seqs(engine, tenant_id) == [1, 2, 3]


def test_balances_changed_keeps_the_locks_until_the_caller_ends(
    pool_sessions: sessionmaker[Session], tenant_id: str
) -> None:
    payer = _wallet(pool_sessions, tenant_id, "payer", 100)
    payee = _wallet(pool_sessions, tenant_id, "payee", 0)
    with unit_of_work(pool_sessions) as holder:
        with pytest.raises(BalancesChanged) as raised:
            post_transfers(
                holder,
                tenant_id=tenant_id,
                transfers=[AccountTransfer("ante", payer, payee, 5)],
                expected_balances={payer: 90},
            )
        assert raised.value.balances == {payer: 100}

        # Another writer cannot move the payer's money while the holder decides again.
        with pytest.raises(OperationalError, match="lock"):
            _withdraw_impatiently(pool_sessions, tenant_id, payer, 100)

        post_transfers(
            holder,
            tenant_id=tenant_id,
            transfers=[AccountTransfer("ante", payer, payee, 5)],
            expected_balances=raised.value.balances,
        )
    with unit_of_work(pool_sessions) as session:
        assert (balance_of(session, payer), balance_of(session, payee)) == (95, 5)
        withdraw(session, tenant_id=tenant_id, account_id=payer, amount=95)


def _withdraw_impatiently(
    sessions: sessionmaker[Session], tenant_id: str, account_id: str, amount: int
) -> None:
    with unit_of_work(sessions) as session:
        session.execute(text("SET LOCAL lock_timeout = '300ms'"))
        withdraw(session, tenant_id=tenant_id, account_id=account_id, amount=amount)
