"""Property tests: random deposits, withdrawals and transfers never break the books.

Each example gets a tenant of its own in the test's database, so examples do not see each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import unit_of_work
from pokna.ledger import (
    AccountTransfer,
    InsufficientFunds,
    deposit,
    export_jsonl,
    open_account,
    post_transfers,
    reconcile,
    trial_balance,
    verify_export,
    withdraw,
)

pytest_plugins = ["ledger_fixtures"]

WALLETS = 4


@dataclass(frozen=True)
class Op:
    kind: str  # deposit | withdraw | transfer
    source: int
    target: int
    amount: int
    game: int  # a transfer's game: its transactions go on that game's chain


ops = st.lists(
    st.builds(
        Op,
        kind=st.sampled_from(["deposit", "withdraw", "transfer", "transfer"]),
        source=st.integers(0, WALLETS - 1),
        target=st.integers(0, WALLETS - 1),
        amount=st.one_of(st.integers(1, 200), st.just(10**15)),
        game=st.integers(0, 5),
    ),
    max_size=25,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=ops)
def test_random_money_moves_keep_the_books_sound(
    sessions: sessionmaker[Session], make_tenant: Callable[[], str], script: list[Op]
) -> None:
    tenant_id = make_tenant()
    with unit_of_work(sessions) as session:
        wallets = [
            open_account(session, tenant_id=tenant_id, kind="player_wallet", external_id=f"w{i}").id
            for i in range(WALLETS)
        ]
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="pot").id
    expected = dict.fromkeys([*wallets, pot], 0)
    posted = 0

    for op in script:
        source, target = wallets[op.source], wallets[op.target]
        overdraws = op.kind != "deposit" and expected[source] < op.amount
        try:
            with unit_of_work(sessions) as session:
                if op.kind == "deposit":
                    deposit(session, tenant_id=tenant_id, account_id=target, amount=op.amount)
                elif op.kind == "withdraw":
                    withdraw(session, tenant_id=tenant_id, account_id=source, amount=op.amount)
                else:
                    # Through the pot and out again: two moves posted atomically.
                    post_transfers(
                        session,
                        tenant_id=tenant_id,
                        transfers=[
                            AccountTransfer("ante", source, pot, op.amount),
                            AccountTransfer("payout", pot, target, op.amount),
                        ],
                        reference=f"game-{op.game}",
                    )
        except InsufficientFunds:
            assert overdraws
            continue
        assert not overdraws
        posted += 1 if op.kind != "transfer" else 2
        if op.kind == "deposit":
            expected[target] += op.amount
        elif op.kind == "withdraw":
            expected[source] -= op.amount
        else:
            expected[source] -= op.amount
            expected[target] += op.amount

    with unit_of_work(sessions) as session:
        trial = trial_balance(session, tenant_id)
        assert trial.total == 0
        stored = {entry.account_id: entry.balance for entry in trial.accounts if entry.account_id in expected}
        assert stored == expected
        assert all(balance >= 0 for balance in stored.values())
        assert reconcile(session, tenant_id).ok
        sums: dict[str, int] = dict(
            session.execute(
                text(
                    "SELECT a.id, COALESCE(SUM(p.amount), 0) FROM account a LEFT JOIN posting p ON p.account_id = a.id "
                    "WHERE a.tenant_id = :t GROUP BY a.id"
                ),
                {"t": tenant_id},
            ).all()
        )
        assert {account: int(total) for account, total in sums.items()} == {
            entry.account_id: entry.balance for entry in trial.accounts
        }
        report = verify_export(export_jsonl(session, tenant_id))
        places = session.execute(
            text("SELECT chain, seq FROM journal_transaction WHERE tenant_id = :t ORDER BY chain, seq"),
            {"t": tenant_id},
        ).all()
    # Every transaction posted is on one chain, each chain's seqs 1, 2, 3 ... with none repeated or skipped.
    assert len(places) == posted == report.transactions
    for chain in {chain for chain, _ in places}:
        seqs = [seq for on, seq in places if on == chain]
        assert seqs == list(range(1, len(seqs) + 1))
    assert report.valid, report.findings
    assert report.trial_balance() in ({}, {"CREDIT": 0})
    assert {account: report.balances.get(account, 0) for account in expected} == expected
