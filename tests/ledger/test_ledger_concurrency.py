"""Real concurrency on PostgreSQL, through the service functions the API calls: deposits and withdrawals
(pokna.ledger.moving.move, support.money) and whole games (the dealer's async creation and play,
support.acting). Each client has a connection of its own, opened before any of them starts; then all are
released at one instant."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from psycopg import AsyncConnection
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.ledger import MAX_ABS_BALANCE, JournalTransaction
from pokna.dealer import service as games
from pokna.errors import IdempotencyKeyReused, IdempotencyRequestInProgress
from pokna.ledger import AmountOutOfRange, InsufficientFunds, verify_export
from pokna.runtime import Runtime
from pokna_verify.ledger.chain import chain_for
from support.acting import create_game_now, play_now
from support.driver import export_jsonl, open_account, reconcile
from support.game_play import obliging
from support.ledger_reads import balance_of, system_balance
from support.money import Teller, new_teller
from support.sessions import unit_of_work

pytest_plugins = ["ledger_fixtures"]

CLIENTS = 8
CLOCK = games.Clock(now=datetime(2026, 11, 30, 12, 0, tzinfo=UTC), open_game_ttl=timedelta(minutes=10))
T = TypeVar("T")


def _together(
    teller: Teller, count: int, work: Callable[[int, AsyncConnection[Any]], Awaitable[T]]
) -> list[T]:
    """`work(i, connection)` for i in range(count), each on a connection of its own, all released at once."""

    async def clients() -> list[T]:
        barrier = asyncio.Barrier(count)

        async def client(index: int) -> T:
            async with teller.database.connection() as connection:
                await barrier.wait()
                return await work(index, connection)

        return list(await asyncio.wait_for(asyncio.gather(*(client(i) for i in range(count))), 120))

    return teller.run(clients())


def _wallets(sessions: sessionmaker[Session], teller: Teller, count: int, funds: int) -> list[str]:
    with unit_of_work(sessions) as session:
        wallets = [
            open_account(session, tenant_id=teller.tenant_id, kind="player_wallet").id for _ in range(count)
        ]
    if funds:
        _fund(teller, wallets, funds)
    return wallets


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


def test_concurrent_withdrawals_never_overdraw(
    sessions: sessionmaker[Session], engine: Engine, teller: Teller
) -> None:
    (wallet,) = _wallets(sessions, teller, 1, 1000)
    attempts, amount = 24, 70

    async def withdraw(_index: int, connection: AsyncConnection[Any]) -> bool:
        try:
            await teller.withdraw(wallet, amount, connection=connection)
        except InsufficientFunds:
            return False
        return True

    outcomes = _together(teller, attempts, withdraw)
    assert sum(outcomes) == 1000 // amount == 14
    with unit_of_work(sessions) as session:
        assert balance_of(session, wallet) == 1000 - 14 * amount
        assert reconcile(session, teller.tenant_id).ok
    assert _seqs(engine, teller.tenant_id) == list(range(1, 16))


def test_games_seating_two_wallets_in_opposite_orders_never_deadlock(
    runtime: Runtime, sessions: sessionmaker[Session], engine: Engine, teller: Teller
) -> None:
    """Money moves between wallets only in games: every client plays game after game between the same two
    wallets, half of them with the seats the other way round, so creations and postings take the two
    wallets (and the games' pots) in every order at once."""
    left, right = _wallets(sessions, teller, 2, 10_000)
    rounds = 25

    async def shuffle(index: int, connection: AsyncConnection[Any]) -> int:
        for step in range(rounds):
            vigo, player = (left, right) if (index + step) % 2 else (right, left)
            terms = games.NewGame(vigo, [player], stake=1 + step % 3)
            game = await create_game_now(runtime, CLOCK, teller.tenant_id, terms, connection)
            game = await play_now(runtime, CLOCK, teller.tenant_id, game, obliging, connection)
            assert game["status"] == "settled", game
        return rounds

    assert sum(_together(teller, CLIENTS, shuffle)) == CLIENTS * rounds
    with unit_of_work(sessions) as session:
        assert balance_of(session, left) + balance_of(session, right) == 20_000
        assert reconcile(session, teller.tenant_id, check_chain=True).ok
        report = verify_export(export_jsonl(session, teller.tenant_id))
    with engine.connect() as connection:
        assert connection.execute(text("SELECT sum(balance) FROM account")).scalar() == 0
        pots = connection.execute(
            text("SELECT count(*), sum(balance) FROM account WHERE kind = 'game_pot'")
        ).one()
    assert tuple(pots) == (CLIENTS * rounds, 0)
    assert report.valid, report.findings
    seqs = _seqs(engine, teller.tenant_id)
    assert report.transactions == len(seqs) >= 2 + 2 * CLIENTS * rounds  # an ante and a payout a game


def test_concurrent_moves_keep_every_tenant_chain_gap_free_and_unbroken(
    runtime: Runtime, sessions: sessionmaker[Session], engine: Engine, teller: Teller
) -> None:
    tellers = [teller, new_teller(runtime, sessions, "Tosche Station")]
    wallets = {one.tenant_id: _wallets_on_distinct_chains(sessions, one, 3) for one in tellers}
    for one in tellers:
        _fund(one, wallets[one.tenant_id], 500)
    posts = 30

    async def churn(index: int, connection: AsyncConnection[Any]) -> dict[str, int]:
        """Net money in per tenant, of the moves that posted."""
        rng = random.Random(index)
        net = {one.tenant_id: 0 for one in tellers}
        for _ in range(posts):
            one = rng.choice(tellers)
            wallet, amount = rng.choice(wallets[one.tenant_id]), rng.randint(1, 40)
            try:
                if rng.random() < 0.5:
                    await one.deposit(wallet, amount, connection=connection)
                    net[one.tenant_id] += amount
                else:
                    await one.withdraw(wallet, amount, connection=connection)
                    net[one.tenant_id] -= amount
            except InsufficientFunds:
                pass
        return net

    nets = _together(teller, CLIENTS, churn)
    for one in tellers:
        tenant = one.tenant_id
        assert len({chain_for(wallet) for wallet in wallets[tenant]}) == 3
        seqs = _seqs(engine, tenant)
        with unit_of_work(sessions) as session:
            report = verify_export(export_jsonl(session, tenant))
            balances = {wallet: balance_of(session, wallet) for wallet in wallets[tenant]}
            funding = system_balance(session, tenant, "external_funding")
        assert report.valid, report.findings
        assert report.transactions == len(seqs)
        assert {wallet: report.balances[wallet] for wallet in wallets[tenant]} == balances
        assert sum(balances.values()) == 1500 + sum(net[tenant] for net in nets) == -funding


def test_parallel_retries_under_one_key_post_once(
    sessions: sessionmaker[Session], engine: Engine, teller: Teller
) -> None:
    (wallet,) = _wallets(sessions, teller, 1, 0)

    async def retry(_index: int, connection: AsyncConnection[Any]) -> str:
        try:
            answer = await teller.deposit(wallet, 250, key="dep-42", connection=connection)
        except IdempotencyRequestInProgress:
            return "in progress"
        return str(answer["id"])

    outcomes = _together(teller, CLIENTS, retry)
    assert len({outcome for outcome in outcomes if outcome != "in progress"}) == 1
    again = teller.run(teller.deposit(wallet, 250, key="dep-42"))
    assert again["id"] in outcomes
    with unit_of_work(sessions) as session:
        assert balance_of(session, wallet) == 250
    assert _seqs(engine, teller.tenant_id) == [1]


def test_parallel_requests_under_one_key_post_exactly_one(
    sessions: sessionmaker[Session], engine: Engine, teller: Teller
) -> None:
    """Eight different withdrawals under one key at once: one posts; each other is told the key was used for
    a different request, or that a request under it is in progress (and then, sent again, that it was
    used)."""
    (payer,) = _wallets(sessions, teller, 1, 1000)

    async def request(index: int, connection: AsyncConnection[Any]) -> str:
        try:
            await teller.withdraw(payer, 1 + index, key="round-7", connection=connection)
        except IdempotencyKeyReused:
            return "refused"
        except IdempotencyRequestInProgress:
            return "in progress"
        return f"request-{index}"

    outcomes = _together(teller, CLIENTS, request)
    winners = [outcome for outcome in outcomes if outcome.startswith("request-")]
    assert len(winners) == 1
    winner = int(winners[0].removeprefix("request-"))
    for index, outcome in enumerate(outcomes):
        if outcome == "in progress":
            try:
                teller.run(teller.withdraw(payer, 1 + index, key="round-7"))
            except IdempotencyKeyReused:
                continue
            raise AssertionError("a different request under a used key posted")
    with unit_of_work(sessions) as session:
        assert balance_of(session, payer) == 1000 - (1 + winner)
        assert reconcile(session, teller.tenant_id).ok
    assert _seqs(engine, teller.tenant_id) == [1, 2]


def test_no_balance_goes_past_the_bound_however_many_deposit_at_once(
    sessions: sessionmaker[Session], engine: Engine, teller: Teller
) -> None:
    """Deposits of the largest amount, from eight clients into one wallet: the 1000th takes it to 10^18, and
    every one after is refused, naming it, with nothing posted. Each deposit takes a free chain of the
    tenant's, and the funding sub-account of that chain: together they owe exactly the wallet's 10^18."""
    (wallet,) = _wallets(sessions, teller, 1, 0)
    each = 1000 // CLIENTS + 1

    async def deposits(_index: int, connection: AsyncConnection[Any]) -> list[str]:
        refused = []
        for _ in range(each):
            try:
                await teller.deposit(wallet, 10**15, connection=connection)
            except AmountOutOfRange as error:
                refused.append(str(error.extensions["account_id"]))
        return refused

    refused = [account for found in _together(teller, CLIENTS, deposits) for account in found]
    with unit_of_work(sessions) as session:
        assert balance_of(session, wallet) == MAX_ABS_BALANCE
        assert system_balance(session, teller.tenant_id, "external_funding") == -MAX_ABS_BALANCE
        assert reconcile(session, teller.tenant_id).ok
    assert refused == [wallet] * (CLIENTS * each - 1000)
    assert _seqs(engine, teller.tenant_id) == list(range(1, 1001))


def _wallets_on_distinct_chains(sessions: sessionmaker[Session], teller: Teller, count: int) -> list[str]:
    found: dict[int, str] = {}
    with unit_of_work(sessions) as session:
        while len(found) < count:
            wallet = open_account(session, tenant_id=teller.tenant_id, kind="player_wallet").id
            found.setdefault(chain_for(wallet), wallet)
    return list(found.values())


def _fund(teller: Teller, wallets: list[str], amount: int) -> None:
    async def fund() -> None:
        for wallet in wallets:
            await teller.deposit(wallet, amount)

    teller.run(fund())
