"""A tenant's journal is LEDGER_CHAINS hash chains (issue 25): what the database holds each chain to, and
that one chain's writers do not wait for another's (the point of having several)."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from pokna.db import migrate
from pokna.db.engine import make_engine
from pokna.db.models.ledger import CHAIN_IN_RANGE
from pokna.ledger import LEDGER_CHAINS, GameAccounts, checkpoint_document, hold_wallets, verify_export
from pokna.ledger.drafts import draft_of, unchained
from pokna.ledger.model import Posting
from pokna.runtime import Runtime
from pokna.settings import Environment, Settings
from pokna_verify.crypto.signing import generate_signing_key
from pokna_verify.ledger.chain import GENESIS_HASH, chain_for, format_timestamp
from support.driver import export_jsonl, funding_account, open_account, take_checkpoint
from support.ledger_reads import house_account, revenue_account
from support.money import Teller, new_teller
from support.sessions import make_sessionmaker, unit_of_work
from support.tenant_api import TenantApi

pytest_plugins = ["ledger_fixtures"]

SIGNER = generate_signing_key()


def test_the_database_and_the_code_count_the_same_chains(engine: Engine) -> None:
    with engine.connect() as connection:
        definitions = connection.scalars(
            text(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conname IN ('ck_journal_transaction_chain_in_range', 'ck_ledger_head_chain_in_range')"
            )
        ).all()
    assert len(definitions) == 2
    for definition in definitions:
        low, high = map(int, re.findall(r"\d+", definition))
        assert (low, high) == (0, LEDGER_CHAINS - 1)
    assert f"chain BETWEEN 0 AND {LEDGER_CHAINS - 1}" == CHAIN_IN_RANGE


def _raw(
    engine: Engine, tenant_id: str, chain: int, seq: int, prev_hash: str, legs: list[tuple[str, int]]
) -> None:
    """A transaction written around ledger_post(), as a bad actor with SQL access would: the triggers and
    constraints are what stop it."""
    with engine.begin() as connection:
        transaction_id = f"txn_raw_{chain}_{seq}_{prev_hash[:6]}"
        connection.execute(
            text(
                "INSERT INTO journal_transaction (id, tenant_id, chain, seq, kind, metadata, posting_count, "
                "prev_hash, hash, created_at) VALUES (:id, :tenant, :chain, :seq, 'adjustment', '{}', :count, "
                ":prev, repeat('a', 64), CURRENT_TIMESTAMP)"
            ),
            {
                "id": transaction_id,
                "tenant": tenant_id,
                "chain": chain,
                "seq": seq,
                "count": len(legs),
                "prev": prev_hash,
            },
        )
        for leg, (account_id, amount) in enumerate(legs):
            connection.execute(
                text(
                    "INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency, "
                    "created_at) SELECT :id, tenant_id, id, :leg, :account, :amount, 'CREDIT', created_at "
                    "FROM journal_transaction WHERE tenant_id = :tenant AND id = :txn"
                ),
                {"id": f"{transaction_id}_{leg}", "tenant": tenant_id, "txn": transaction_id, "leg": leg,
                 "account": account_id, "amount": amount},
            )  # fmt: skip


@pytest.mark.usefixtures("on_chain_zero")
def test_each_chain_links_on_its_own_and_no_chain_exists_past_the_last(
    sessions: sessionmaker[Session], engine: Engine, tenant_api: TenantApi
) -> None:
    tenant_id = tenant_api.tenant_id
    answer = tenant_api.deposit(tenant_api.wallet(), 5)
    assert answer.status_code == 201, answer.text
    first = answer.json()
    assert (first["chain"], first["seq"], first["prev_hash"]) == (0, 1, GENESIS_HASH)
    with unit_of_work(sessions) as session:
        house, funding = house_account(session, tenant_id).id, funding_account(session, tenant_id).id
    legs = [(house, 1), (funding, -1)]
    # Another chain starts at the genesis hash, whatever chain 0 holds ...
    _raw(engine, tenant_id, 3, 1, GENESIS_HASH, legs)
    # ... and never links onto another chain's transaction.
    with pytest.raises(IntegrityError, match=r"seq 2 of chain 3 .* does not extend the chain"):
        _raw(engine, tenant_id, 3, 2, first["hash"], legs)
    with pytest.raises(IntegrityError, match=r"duplicate key|unique"):
        _raw(engine, tenant_id, 3, 1, GENESIS_HASH, legs)
    with pytest.raises(IntegrityError, match="chain_in_range"):
        _raw(engine, tenant_id, LEDGER_CHAINS, 1, GENESIS_HASH, legs)
    with pytest.raises(IntegrityError, match="chain_in_range"):
        _raw(engine, tenant_id, -1, 1, GENESIS_HASH, legs)


def test_a_batch_naming_a_chain_past_the_last_is_refused_by_ledger_post(
    engine: Engine, tenant_id: str
) -> None:
    with pytest.raises(DBAPIError, match="chain_in_range"), engine.begin() as connection:
        connection.execute(
            text("SELECT status FROM ledger_post(:tenant, CAST(:batch AS jsonb))"),
            {
                "tenant": tenant_id,
                "batch": f'{{"version": 1, "chain": {LEDGER_CHAINS}, "accounts": [], "transactions": []}}',
            },
        )


def test_a_deposit_takes_a_free_chain_and_waits_only_while_every_head_is_held(
    sessions: sessionmaker[Session], engine: Engine, teller: Teller
) -> None:
    """While one transaction holds a chain's head (as a posting does until COMMIT), a deposit to a wallet on
    another chain posts at once on its own, and one to a wallet on the held chain posts at once on the next
    (issue 44: a deposit takes a free chain); while every head is held, a deposit waits for its own."""
    tenant_id = teller.tenant_id
    with unit_of_work(sessions) as session:
        wallets = [open_account(session, tenant_id=tenant_id, kind="player_wallet").id for _ in range(40)]

    async def deposits() -> None:
        for wallet in wallets:  # alone, each deposit is on its wallet's chain
            await teller.deposit(wallet, 10)

    teller.run(deposits())
    chains = {wallet: chain_for(wallet) for wallet in wallets}
    held = chains[wallets[0]]
    elsewhere = next(wallet for wallet in wallets if chains[wallet] not in (held, (held + 1) % LEDGER_CHAINS))
    assert len(set(chains.values())) > 8  # forty wallets spread over the chains
    hold = text("SELECT last_seq FROM ledger_head WHERE tenant_id = :t AND chain = ANY(:c) FOR UPDATE")

    holder = engine.connect()
    try:
        holder.begin()
        holder.execute(hold, {"t": tenant_id, "c": [held]})

        async def while_one_is_held() -> tuple[dict[str, Any], dict[str, Any]]:
            moved = await asyncio.wait_for(teller.deposit(elsewhere, 1), 5)
            beside = await asyncio.wait_for(teller.deposit(wallets[0], 1), 5)
            return moved, beside

        moved, beside = teller.run(while_one_is_held())
        holder.execute(hold, {"t": tenant_id, "c": list(range(LEDGER_CHAINS))})

        async def while_all_are_held() -> dict[str, Any]:
            waiting = asyncio.create_task(teller.deposit(wallets[0], 1))
            done, _ = await asyncio.wait({waiting}, timeout=0.5)
            assert not done, "with every head held, a deposit should wait for its own"
            holder.rollback()  # the heads are free: the waiting deposit posts
            return await asyncio.wait_for(waiting, 10)

        waited = teller.run(while_all_are_held())
    finally:
        holder.rollback()
        holder.close()
    assert moved["chain"] == chains[elsewhere] != held
    assert beside["chain"] == (held + 1) % LEDGER_CHAINS
    assert waited["chain"] == held
    with unit_of_work(sessions) as session:
        report = verify_export(export_jsonl(session, tenant_id))
    assert report.valid, report.findings
    assert report.transactions == len(wallets) + 3


def test_books_written_before_chains_verify_unchanged_after_the_upgrade(
    empty_database_url: str, tmp_path: Path
) -> None:
    """What 0013's schema held (one chain per tenant) is chain 0 after 0014, with every hash unchanged, and
    the books go on over several chains and verify whole, against a checkpoint of every head."""
    migrate.upgrade(empty_database_url, "0013_beacon_rolls")
    settings = Settings(env=Environment.TEST, data_dir=tmp_path / "data", database_url=empty_database_url)
    engine = make_engine(empty_database_url)
    sessions = make_sessionmaker(engine)
    try:
        teller = new_teller(Runtime.from_settings(settings), sessions, "before chains")
        tenant_id = teller.tenant_id
        with unit_of_work(sessions) as session:
            wallet = open_account(session, tenant_id=tenant_id, kind="player_wallet").id
            funding = funding_account(session, tenant_id).id
        for amount in (10, 20, 30):
            _deposit_before_chains(engine, tenant_id, wallet, funding, amount)
        with engine.connect() as connection:
            before_rows = connection.execute(
                text("SELECT seq, hash FROM journal_transaction ORDER BY seq")
            ).all()
        assert [seq for seq, _ in before_rows] == [1, 2, 3]
        engine.dispose()

        migrate.upgrade(empty_database_url)
        teller = replace(teller, database=Runtime.from_settings(settings).aio)
        with unit_of_work(sessions) as session:
            wallets = [open_account(session, tenant_id=tenant_id, kind="player_wallet").id for _ in range(12)]

        async def more() -> None:
            for other in wallets:
                await teller.deposit(other, 5)

        teller.run(more())
        with unit_of_work(sessions) as session:
            signed = checkpoint_document(take_checkpoint(session, tenant_id, SIGNER))
            lines = list(export_jsonl(session, tenant_id))
        with engine.connect() as connection:
            after = connection.execute(
                text("SELECT seq, hash FROM journal_transaction WHERE chain = 0 ORDER BY seq")
            ).all()
    finally:
        engine.dispose()
    assert after[:3] == before_rows
    assert len({head["chain"] for head in signed["heads"]}) > 3
    report = verify_export(lines, checkpoint=signed, public_key=SIGNER.public_key())
    assert report.valid, report.findings
    assert report.checkpoint_checked
    assert report.transactions == 3 + len(wallets)
    assert report.trial_balance() == {"CREDIT": 0}


def _deposit_before_chains(engine: Engine, tenant_id: str, wallet: str, funding: str, amount: int) -> None:
    """A deposit as the previous release posted it on 0013's schema: drafted and hashed as today (0013
    knew no chain: chain 0, hashed without one), sent to 0013's ledger_post() as its arrays by column."""
    draft = draft_of("deposit", [Posting(wallet, amount), Posting(funding, -amount)], None, None)
    row, postings, parts = unchained(tenant_id, draft, {wallet: "CREDIT", funding: "CREDIT"}, 0)
    arrays = {
        "accounts": sorted({wallet, funding}),
        "expected_ids": [],
        "expected_balances": [],
        "t_id": [row["id"]],
        "t_kind": [row["kind"]],
        "t_reference": [None],
        "t_metadata": [json.dumps(row["metadata"])],
        "t_idempotency_key": [None],
        "t_request_hash": [None],
        "t_posting_count": [len(postings)],
        "t_created_at": [format_timestamp(row["created_at"])],
        "t_before_prev": ["\\x" + parts[0].hex()],
        "t_before_seq": ["\\x" + parts[1].hex()],
        "t_rest": ["\\x" + parts[2].hex()],
        "p_id": [posting["id"] for posting in postings],
        "p_transaction": [1 for _ in postings],
        "p_leg": list(range(len(postings))),
        "p_account_id": [posting["account_id"] for posting in postings],
        "p_amount": [posting["amount"] for posting in postings],
        "p_currency": [posting["currency"] for posting in postings],
    }
    with engine.begin() as connection:
        status = connection.scalar(
            text("SELECT status FROM ledger_post(:tenant, CAST(:batch AS jsonb))"),
            {"tenant": tenant_id, "batch": json.dumps(arrays)},
        )
    assert status == "posted"


def test_a_lost_race_holds_every_account_its_step_may_post_to(
    sessions: sessionmaker[Session], engine: Engine, teller: Teller
) -> None:
    """A game request decided again after a lost race holds its chain's head and then, in one statement in
    ascending id order, the wallets, the pot and the revenue sub-account of the game's chain (a rake): taking
    it later, at the posting, would take it after wallets of higher id while a posting on another chain may
    hold it and wait for one of those wallets (a deadlock that one head per tenant used to hide). Another
    chain's revenue sub-account is not held: rakes of games on other chains do not wait for this one."""
    tenant_id = teller.tenant_id
    chain = chain_for("game_x")
    other_chain = (chain + 1) % LEDGER_CHAINS
    with unit_of_work(sessions) as session:
        wallets = [open_account(session, tenant_id=tenant_id, kind="player_wallet").id for _ in range(3)]
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot").id
        revenue = revenue_account(session, tenant_id, chain=chain).id
        elsewhere = revenue_account(session, tenant_id, chain=other_chain).id

    async def deposits() -> None:
        for wallet in wallets:
            await teller.deposit(wallet, 7)

    teller.run(deposits())
    game = GameAccounts(chain, "CREDIT", pot, wallets)

    async def hold_and_look() -> None:
        async with teller.database.connection() as connection, connection.transaction():
            assert await hold_wallets(connection, tenant_id, game) == dict.fromkeys(wallets, 7)
            with engine.connect() as other:
                other.execute(text("SET lock_timeout = '100ms'"))
                for account_id in (*wallets, pot, revenue):
                    with pytest.raises(OperationalError, match="lock timeout"):
                        other.execute(
                            text("SELECT 1 FROM account WHERE id = :id FOR NO KEY UPDATE"), {"id": account_id}
                        )
                    other.rollback()
                    other.execute(text("SET lock_timeout = '100ms'"))
                held = text("SELECT id FROM account WHERE id = :id FOR NO KEY UPDATE")
                assert other.execute(held, {"id": elsewhere}).scalar_one() == elsewhere
                other.rollback()

    teller.run(hold_and_look())
