"""Property tests: random deposits, withdrawals and games never break the books.

Money moves as clients move it, through the service functions the API calls: deposits and withdrawals
through pokna.ledger.moving (support.money), games through the dealer's async creation and play
(support.acting), whose transfers between the seats' wallets and the game's pot are the only way money
moves from one wallet to another. Each example gets a tenant of its own in the test's database, so
examples do not see each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from pokna.dealer import service as games
from pokna.ledger import InsufficientFunds, verify_export
from pokna.runtime import Runtime
from support.acting import create_game_now, play_now, read_proof
from support.driver import export_jsonl, open_account, reconcile
from support.game_play import obliging
from support.ledger_reads import trial_balance
from support.money import Teller, new_teller
from support.sessions import unit_of_work

WALLETS = 4
CLOCK = games.Clock(now=datetime(2026, 11, 30, 12, 0, tzinfo=UTC), open_game_ttl=timedelta(minutes=10))


@dataclass(frozen=True)
class Op:
    kind: str  # deposit | withdraw | game
    source: int  # a withdrawal's wallet, a game's Vigo
    target: int  # a deposit's wallet, a game's player
    amount: int  # a game's stake


ops = st.lists(
    st.builds(
        Op,
        kind=st.sampled_from(["deposit", "withdraw", "game", "game"]),
        source=st.integers(0, WALLETS - 1),
        target=st.integers(0, WALLETS - 1),
        amount=st.one_of(st.integers(1, 200), st.just(10**15)),
    ),
    max_size=25,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=ops)
def test_random_money_moves_keep_the_books_sound(
    runtime: Runtime, sessions: sessionmaker[Session], script: list[Op]
) -> None:
    teller = new_teller(runtime, sessions)
    tenant_id = teller.tenant_id
    with unit_of_work(sessions) as session:
        wallets = [
            open_account(session, tenant_id=tenant_id, kind="player_wallet", external_id=f"w{i}").id
            for i in range(WALLETS)
        ]
    expected = dict.fromkeys(wallets, 0)
    played: list[dict[str, Any]] = []
    posted = teller.run(_play_script(runtime, teller, wallets, script, expected, played))

    with unit_of_work(sessions) as session:
        for game in played:  # each transfer the rules called for, posted once, and nothing else for the game
            proof = read_proof(runtime, CLOCK, tenant_id, game["id"]).model_dump(mode="json")
            kinds = session.scalars(
                text(
                    "SELECT kind FROM journal_transaction WHERE tenant_id = :t AND reference = :g ORDER BY seq"
                ),
                {"t": tenant_id, "g": game["id"]},
            ).all()
            assert kinds == [transfer["kind"] for transfer in proof["transfers"]]
            posted += len(kinds)
        trial = trial_balance(session, tenant_id)
        assert trial.total == 0
        stored = {entry.account_id: entry.balance for entry in trial.accounts if entry.account_id in expected}
        assert stored == expected
        assert all(balance >= 0 for balance in stored.values())
        assert {entry.account_id: entry.balance for entry in trial.accounts if entry.kind == "game_pot"} == (
            dict.fromkeys((game["pot_account_id"] for game in played), 0)
        )
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


async def _play_script(
    runtime: Runtime,
    teller: Teller,
    wallets: list[str],
    script: list[Op],
    expected: dict[str, int],
    played: list[dict[str, Any]],
) -> int:
    """Each op in turn; `expected` follows every wallet's balance, `played` gathers the games as they ended.
    Answers how many deposits and withdrawals were posted."""
    posted = 0
    for op in script:
        source, target = wallets[op.source], wallets[op.target]
        if op.kind == "game":
            if source == target:
                continue  # one wallet cannot take two seats
            game = await _game(runtime, teller.tenant_id, source, target, op.amount)
            played.append(game)
            for seat in game["seats"]:
                expected[seat["account_id"]] += seat["paid_out"] - seat["paid_in"]
            continue
        overdraws = op.kind == "withdraw" and expected[source] < op.amount
        try:
            if op.kind == "deposit":
                await teller.deposit(target, op.amount)
            else:
                await teller.withdraw(source, op.amount)
        except InsufficientFunds:
            assert overdraws
            continue
        assert not overdraws
        posted += 1
        if op.kind == "deposit":
            expected[target] += op.amount
        else:
            expected[source] -= op.amount
    return posted


async def _game(runtime: Runtime, tenant_id: str, vigo: str, player: str, stake: int) -> dict[str, Any]:
    """A game between the two, played the shortest way to its end; cancelled if a seat cannot pay its ante
    (the rules then offer the Vigo no start)."""
    game = await create_game_now(runtime, CLOCK, tenant_id, games.NewGame(vigo, [player], stake=stake))
    return await play_now(runtime, CLOCK, tenant_id, game, _shortest)


def _shortest(game: dict[str, Any]) -> dict[str, Any]:
    if game["phase"] == "open" and "start" not in game["turn"]["allowed_actions"]:
        return {"type": "cancel"}
    return obliging(game)
