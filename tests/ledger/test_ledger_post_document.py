"""ledger_post()'s contract, called as game_write() and ledger_move() call it: one document of transactions and
their postings (service/pokna/sql/ledger_post.sql), built by the service's own builder, and an answer that
says where the batch went. The refusals are checked leg by leg in order, and a refused batch writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.ledger import MAX_ABS_BALANCE
from pokna.ledger.drafts import draft_of, unchained
from pokna.ledger.model import AccountTransfer, Posting
from pokna.ledger.posting_batch import batch_document
from pokna_verify.ledger.chain import GENESIS_HASH
from support.chain_hash import hash_from_parts
from support.driver import funding_account, open_account
from support.sessions import unit_of_work

pytest_plugins = ["ledger_fixtures"]

CHAIN = 5


def _post(
    engine: Engine,
    tenant_id: str,
    transactions: Sequence[Sequence[Posting]],
    expected: Mapping[str, int] | None = None,
) -> tuple[dict[str, Any], list[Any]]:
    """One ledger_post() call of these transactions, in its own transaction: its answer, and what was
    drafted (to compare the hashes with)."""
    drafts = [draft_of("adjustment", postings, None, None) for postings in transactions]
    accounts = sorted({posting.account_id for postings in transactions for posting in postings})
    written = [unchained(tenant_id, draft, dict.fromkeys(accounts, "CREDIT"), CHAIN) for draft in drafts]
    document = batch_document(accounts, expected or {}, written, CHAIN)
    with engine.begin() as connection:
        row = connection.execute(
            text("SELECT * FROM ledger_post(:tenant, CAST(:batch AS jsonb))"),
            {"tenant": tenant_id, "batch": json.dumps(document.as_json())},
        ).one()
    return dict(row._mapping), written


def _balances(engine: Engine, tenant_id: str, *accounts: str) -> list[int]:
    with engine.connect() as connection:
        rows: dict[str, int] = dict(
            connection.execute(
                text("SELECT id, balance FROM account WHERE tenant_id = :tenant AND id = ANY(:ids)"),
                {"tenant": tenant_id, "ids": list(accounts)},
            ).all()
        )
    return [rows[account] for account in accounts]


def _journal_size(engine: Engine, tenant_id: str) -> tuple[int, int]:
    with engine.connect() as connection:
        return (
            connection.scalar(
                text("SELECT count(*) FROM journal_transaction WHERE tenant_id = :t"), {"t": tenant_id}
            ),
            connection.scalar(text("SELECT count(*) FROM posting WHERE tenant_id = :t"), {"t": tenant_id}),
        )


@pytest.fixture
def table(sessions: sessionmaker[Session], tenant_id: str) -> dict[str, str]:
    with unit_of_work(sessions) as session:
        return {
            "funding": funding_account(session, tenant_id, chain=CHAIN).id,
            "wallet": open_account(session, tenant_id=tenant_id, kind="player_wallet").id,
            "other": open_account(session, tenant_id=tenant_id, kind="player_wallet").id,
            "pot": open_account(session, tenant_id=tenant_id, kind="game_pot").id,
        }


def test_a_batch_posts_in_order_and_answers_its_place_hashes_and_balances(
    engine: Engine, tenant_id: str, table: dict[str, str]
) -> None:
    funding, wallet, other, pot = table["funding"], table["wallet"], table["other"], table["pot"]
    _post(engine, tenant_id, [AccountTransfer("deposit", funding, wallet, 10).postings()])
    # The pot is paid and pays out in one batch: each leg runs on the balance the legs before it left.
    legs = [
        AccountTransfer("ante", wallet, pot, 10).postings(),
        AccountTransfer("payout", pot, other, 7).postings(),
        AccountTransfer("payout", pot, wallet, 3).postings(),
    ]
    answer, written = _post(engine, tenant_id, legs, expected={wallet: 10, other: 0})
    assert answer["status"] == "posted"
    assert answer["first_seq"] == 2
    hashes = []
    prev_hash = answer["first_prev_hash"]
    for seq, transaction in enumerate(written, start=2):
        hashes.append(hash_from_parts(transaction.parts, prev_hash, seq))
        prev_hash = hashes[-1]
    assert answer["hashes"] == hashes
    held = dict(zip(answer["held_account_ids"], answer["held_balances"], strict=True))
    assert held == {wallet: 3, other: 7, pot: 0}
    assert _balances(engine, tenant_id, wallet, other, pot) == [3, 7, 0]
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT t.seq, t.prev_hash, t.hash, t.posting_count, array_agg(p.amount ORDER BY p.leg) "
                "FROM journal_transaction t JOIN posting p ON p.tenant_id = t.tenant_id "
                "AND p.transaction_id = t.id WHERE t.tenant_id = :t AND t.chain = :c AND t.seq >= 2 "
                "GROUP BY t.seq, t.prev_hash, t.hash, t.posting_count ORDER BY t.seq"
            ),
            {"t": tenant_id, "c": CHAIN},
        ).all()
    assert [(row.seq, row.hash, row.posting_count, row.array_agg) for row in rows] == [
        (2, hashes[0], 2, [-10, 10]),
        (3, hashes[1], 2, [-7, 7]),
        (4, hashes[2], 2, [-3, 3]),
    ]
    assert [row.prev_hash for row in rows[1:]] == hashes[:2]
    assert answer["first_prev_hash"] != GENESIS_HASH


@pytest.mark.parametrize(
    ("legs", "refused", "balance", "change"),
    [
        # The pot would pay out before it is paid: refused on the first leg that takes it below zero, though
        # the batch's sum per account would be zero.
        ([("pot", "other", 4), ("wallet", "pot", 4)], "pot", 0, -4),
        # The wallet pays twice; the second leg finds what the first left.
        ([("wallet", "pot", 6), ("wallet", "other", 5)], "wallet", 4, -5),
    ],
    ids=["paid-out-before-paid-in", "second-leg-overdraws"],
)
def test_a_leg_below_zero_refuses_the_whole_batch_naming_it(
    engine: Engine,
    tenant_id: str,
    table: dict[str, str],
    legs: list[tuple[str, str, int]],
    refused: str,
    balance: int,
    change: int,
) -> None:
    _post(engine, tenant_id, [AccountTransfer("deposit", table["funding"], table["wallet"], 10).postings()])
    before = _journal_size(engine, tenant_id)
    transfers = [
        AccountTransfer("adjustment", table[payer], table[payee], amount) for payer, payee, amount in legs
    ]
    answer, _ = _post(engine, tenant_id, [transfer.postings() for transfer in transfers])
    assert (answer["status"], answer["refused_account_id"]) == ("insufficient_funds", table[refused])
    assert (answer["refused_balance"], answer["refused_change"]) == (balance, change)
    assert _journal_size(engine, tenant_id) == before
    assert _balances(engine, tenant_id, table["wallet"], table["other"], table["pot"]) == [10, 0, 0]


def test_a_balance_beyond_the_bound_and_a_moved_balance_refuse(
    engine: Engine, tenant_id: str, table: dict[str, str]
) -> None:
    funding, wallet = table["funding"], table["wallet"]
    _post(engine, tenant_id, [AccountTransfer("deposit", funding, wallet, 10).postings()])
    before = _journal_size(engine, tenant_id)
    # The funding account may go below zero, never beyond -10^18: the 1000th deposit of 10^15 takes it (and
    # the wallet) past the bound, the funding's leg first.
    largest = 10**15
    huge = [AccountTransfer("deposit", funding, wallet, largest).postings() for _ in range(1000)]
    answer, _ = _post(engine, tenant_id, huge)
    assert (answer["status"], answer["refused_account_id"]) == ("balance_out_of_range", funding)
    assert answer["refused_balance"] == -10 - 1000 * largest < -MAX_ABS_BALANCE
    answer, _ = _post(
        engine, tenant_id, [AccountTransfer("adjustment", wallet, table["pot"], 1).postings()], {wallet: 9}
    )
    assert answer["status"] == "balances_changed"
    assert _journal_size(engine, tenant_id) == before


def test_an_account_of_another_tenant_is_not_found(
    engine: Engine, tenant_id: str, table: dict[str, str], make_tenant: Any, sessions: sessionmaker[Session]
) -> None:
    other_tenant = make_tenant()
    with unit_of_work(sessions) as session:
        stranger = open_account(session, tenant_id=other_tenant, kind="player_wallet").id
    answer, _ = _post(
        engine, tenant_id, [AccountTransfer("deposit", table["funding"], stranger, 1).postings()]
    )
    assert (answer["status"], answer["refused_account_id"]) == ("account_not_found", stranger)
    assert _journal_size(engine, tenant_id) == (0, 0)
