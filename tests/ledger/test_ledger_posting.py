"""Posting through the service: balances, refusals, idempotency and the chain."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import unit_of_work
from pokna.db.models.ledger import Account, JournalTransaction
from pokna.errors import PoknaError
from pokna.ledger import (
    AccountExists,
    AccountKind,
    AccountNotFound,
    AccountTransfer,
    AmountOutOfRange,
    IdempotencyKeyReused,
    InsufficientFunds,
    InvalidAccount,
    InvalidPostings,
    Posting,
    TenantNotFound,
    TransactionKind,
    UnbalancedTransaction,
    balance_of,
    deposit,
    funding_account,
    get_transaction,
    house_account,
    open_account,
    post_transaction,
    post_transfers,
    reconcile,
    reverse_transaction,
    system_balance,
    transactions_of,
    trial_balance,
    withdraw,
)
from pokna.ledger.chain import chain_for

pytest_plugins = ["ledger_fixtures"]


def _wallet(session: Session, tenant_id: str, name: str, currency: str = "CREDIT") -> str:
    return open_account(
        session, tenant_id=tenant_id, kind=AccountKind.PLAYER_WALLET, currency=currency, external_id=name
    ).id


def _funded_wallet(sessions: sessionmaker[Session], tenant_id: str, name: str, amount: int) -> str:
    with unit_of_work(sessions) as session:
        wallet = _wallet(session, tenant_id, name)
        deposit(session, tenant_id=tenant_id, account_id=wallet, amount=amount)
    return wallet


def _head_seq(session: Session, tenant_id: str, chain: int | None = None) -> int:
    """The chain's last seq; without a chain, how many transactions the tenant has on all its chains."""
    rows = session.execute(
        select(JournalTransaction.chain, JournalTransaction.seq).where(
            JournalTransaction.tenant_id == tenant_id
        )
    ).all()
    if chain is None:
        return len(rows)
    return max((seq for on, seq in rows if on == chain), default=0)


def test_deposit_and_withdraw_move_money_between_wallet_and_funding(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    with unit_of_work(sessions) as session:
        wallet = _wallet(session, tenant_id, "han")
        deposit(session, tenant_id=tenant_id, account_id=wallet, amount=500, reference="dep-1")
        withdraw(session, tenant_id=tenant_id, account_id=wallet, amount=120)
    with unit_of_work(sessions) as session:
        funding = funding_account(session, tenant_id, chain=chain_for(wallet))  # the wallet's chain's
        assert balance_of(session, wallet) == 380
        assert balance_of(session, funding.id) == -380
        assert system_balance(session, tenant_id, "external_funding") == -380
        assert funding.kind == "external_funding"
        trial = trial_balance(session, tenant_id)
        assert {entry.account_id: entry.balance for entry in trial.accounts} == {
            wallet: 380,
            funding.id: -380,
        }
        assert trial.total == 0
        amounts = session.execute(text("SELECT account_id, amount FROM posting ORDER BY amount")).all()
        assert [(row.account_id, row.amount) for row in amounts] == [
            (funding.id, -500),
            (wallet, -120),
            (funding.id, 120),
            (wallet, 500),
        ]


def test_balances_loaded_in_the_session_follow_the_postings(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    with unit_of_work(sessions) as session:
        wallet = open_account(session, tenant_id=tenant_id, kind="player_wallet", external_id="leia")
        deposit(session, tenant_id=tenant_id, account_id=wallet.id, amount=70)
        assert wallet.balance == 70
        session.expire_all()
        assert session.scalars(select(Account).where(Account.id == wallet.id)).one().balance == 70


def test_insufficient_funds_names_the_account_and_posts_nothing(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    wallet = _funded_wallet(sessions, tenant_id, "lando", 100)
    with unit_of_work(sessions) as session:
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="game-1").id
        seq_before = _head_seq(session, tenant_id)
        with pytest.raises(InsufficientFunds) as raised:
            post_transaction(
                session, tenant_id=tenant_id, kind="ante", postings=[Posting(wallet, -101), Posting(pot, 101)]
            )
        assert raised.value.code == "insufficient_funds"
        assert raised.value.status == 409
        assert raised.value.extensions["account_id"] == wallet
        assert isinstance(raised.value, PoknaError)
        assert _head_seq(session, tenant_id) == seq_before
    with unit_of_work(sessions) as session:
        assert balance_of(session, wallet) == 100
        assert balance_of(session, pot) == 0
        # Exactly the whole balance is fine.
        post_transaction(
            session, tenant_id=tenant_id, kind="ante", postings=[Posting(wallet, -100), Posting(pot, 100)]
        )
    with unit_of_work(sessions) as session:
        assert balance_of(session, wallet) == 0
        assert balance_of(session, pot) == 100


def test_a_pot_cannot_pay_out_more_than_it_holds(sessions: sessionmaker[Session], tenant_id: str) -> None:
    wallet = _funded_wallet(sessions, tenant_id, "chewie", 10)
    with unit_of_work(sessions) as session:
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="game-2").id
        with pytest.raises(InsufficientFunds) as raised:
            post_transaction(
                session, tenant_id=tenant_id, kind="payout", postings=[Posting(pot, -1), Posting(wallet, 1)]
            )
        assert raised.value.account_id == pot


def test_house_and_funding_may_go_negative(sessions: sessionmaker[Session], tenant_id: str) -> None:
    with unit_of_work(sessions) as session:
        wallet = _wallet(session, tenant_id, "bossk")
        house = house_account(session, tenant_id).id
        post_transaction(
            session, tenant_id=tenant_id, kind="adjustment", postings=[Posting(house, -5), Posting(wallet, 5)]
        )
    with unit_of_work(sessions) as session:
        assert balance_of(session, house) == -5
        assert house_account(session, tenant_id).id == house  # created once, found afterwards


@pytest.mark.parametrize(
    ("amounts", "error"),
    [
        ((10, -9), UnbalancedTransaction),
        ((10,), InvalidPostings),
        ((0, 0), InvalidPostings),
        ((10**15 + 1, -(10**15 + 1)), AmountOutOfRange),
    ],
)
def test_malformed_postings_are_refused(
    sessions: sessionmaker[Session], tenant_id: str, amounts: tuple[int, ...], error: type[Exception]
) -> None:
    with unit_of_work(sessions) as session:
        accounts = [house_account(session, tenant_id).id, funding_account(session, tenant_id).id]
        with pytest.raises(error):
            post_transaction(
                session,
                tenant_id=tenant_id,
                kind="adjustment",
                postings=[
                    Posting(account, amount) for account, amount in zip(accounts, amounts, strict=False)
                ],
            )
        assert _head_seq(session, tenant_id) == 0


def test_other_refusals(
    sessions: sessionmaker[Session], tenant_id: str, make_tenant: Callable[[], str]
) -> None:
    stranger = make_tenant()
    with unit_of_work(sessions) as session:
        house = house_account(session, tenant_id).id
        funding = funding_account(session, tenant_id).id
        foreign = house_account(session, stranger).id
        with pytest.raises(InvalidPostings, match="twice"):
            post_transaction(
                session,
                tenant_id=tenant_id,
                kind="adjustment",
                postings=[Posting(house, 5), Posting(house, -5)],
            )
        with pytest.raises(AccountNotFound):
            post_transaction(
                session,
                tenant_id=tenant_id,
                kind="adjustment",
                postings=[Posting(house, 5), Posting(foreign, -5)],
            )
        with pytest.raises(AccountNotFound):
            post_transaction(
                session,
                tenant_id=tenant_id,
                kind="adjustment",
                postings=[Posting(house, 5), Posting("acct_nope", -5)],
            )
        with pytest.raises(InvalidPostings, match="kind"):
            post_transaction(
                session, tenant_id=tenant_id, kind="bribe", postings=[Posting(house, 5), Posting(funding, -5)]
            )
        with pytest.raises(InvalidPostings, match="integer"):
            post_transaction(
                session,
                tenant_id=tenant_id,
                kind="adjustment",
                postings=[Posting(house, True), Posting(funding, -1)],
            )
        with pytest.raises(InvalidPostings, match="float"):
            post_transaction(
                session, tenant_id=tenant_id, kind="adjustment", postings=[Posting(house, 1), Posting(funding, -1)],
                metadata={"rate": 0.5},
            )  # fmt: skip
        with pytest.raises(TenantNotFound):
            post_transaction(
                session,
                tenant_id="ten_nope",
                kind="adjustment",
                postings=[Posting(house, 1), Posting(funding, -1)],
            )
        with pytest.raises(InvalidAccount):
            open_account(session, tenant_id=tenant_id, kind="piggy_bank")
        with pytest.raises(InvalidAccount):
            open_account(session, tenant_id=tenant_id, kind="player_wallet", currency="credit")
        with pytest.raises(InvalidPostings):
            deposit(session, tenant_id=tenant_id, account_id=house, amount=-5)
        assert _head_seq(session, tenant_id) == 0


def test_each_currency_must_balance_on_its_own(sessions: sessionmaker[Session], tenant_id: str) -> None:
    with unit_of_work(sessions) as session:
        credit_house = house_account(session, tenant_id, "CREDIT").id
        credit_funding = funding_account(session, tenant_id, "CREDIT").id
        peggat_house = house_account(session, tenant_id, "PEGGAT").id
        peggat_funding = funding_account(session, tenant_id, "PEGGAT").id
        with pytest.raises(UnbalancedTransaction):
            post_transaction(
                session, tenant_id=tenant_id, kind="adjustment",
                postings=[Posting(credit_house, 5), Posting(peggat_funding, -5)],
            )  # fmt: skip
        post_transaction(
            session, tenant_id=tenant_id, kind="adjustment",
            postings=[
                Posting(credit_house, 5), Posting(credit_funding, -5),
                Posting(peggat_house, 7), Posting(peggat_funding, -7),
            ],
        )  # fmt: skip
    with unit_of_work(sessions) as session:
        assert trial_balance(session, tenant_id, "PEGGAT").total == 0
        assert {entry.balance for entry in trial_balance(session, tenant_id, "PEGGAT").accounts} == {7, -7}
        currencies = session.scalars(text("SELECT currency FROM posting ORDER BY leg")).all()
        assert currencies == ["CREDIT", "CREDIT", "PEGGAT", "PEGGAT"]


def test_a_posting_naming_another_currency_than_its_accounts_is_refused(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    with unit_of_work(sessions) as session:
        house = house_account(session, tenant_id).id
        funding = funding_account(session, tenant_id).id
        with pytest.raises(InvalidPostings, match="holds CREDIT"):
            post_transaction(
                session,
                tenant_id=tenant_id,
                kind="adjustment",
                postings=[Posting(house, 5, "PEGGAT"), Posting(funding, -5, "PEGGAT")],
            )
        assert _head_seq(session, tenant_id) == 0
        posted = post_transaction(
            session,
            tenant_id=tenant_id,
            kind="adjustment",
            postings=[Posting(house, 5, "CREDIT"), Posting(funding, -5)],
        )
        assert posted.postings == (Posting(house, 5, "CREDIT"), Posting(funding, -5, "CREDIT"))


def test_idempotent_retry_returns_the_original_and_posts_nothing(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    wallet = _funded_wallet(sessions, tenant_id, "greedo", 50)
    with unit_of_work(sessions) as session:
        first = withdraw(
            session,
            tenant_id=tenant_id,
            account_id=wallet,
            amount=20,
            idempotency_key="wd-1",
            request_hash="h1",
        )
    with unit_of_work(sessions) as session:
        again = withdraw(
            session,
            tenant_id=tenant_id,
            account_id=wallet,
            amount=20,
            idempotency_key="wd-1",
            request_hash="h1",
        )
        assert again.id == first.id
        assert [posting.amount for posting in again.postings] == [-20, 20]
        with pytest.raises(IdempotencyKeyReused) as raised:
            withdraw(
                session,
                tenant_id=tenant_id,
                account_id=wallet,
                amount=25,
                idempotency_key="wd-1",
                request_hash="h2",
            )
        assert raised.value.code == "idempotency_key_reused"
        assert raised.value.status == 422
    with unit_of_work(sessions) as session:
        assert balance_of(session, wallet) == 30
        assert _head_seq(session, tenant_id) == 2


def test_an_idempotency_key_is_per_tenant(
    sessions: sessionmaker[Session], tenant_id: str, make_tenant: Callable[[], str]
) -> None:
    other = make_tenant()
    mine = _funded_wallet(sessions, tenant_id, "zuckuss", 10)
    theirs = _funded_wallet(sessions, other, "zuckuss", 10)
    with unit_of_work(sessions) as session:
        one = withdraw(
            session, tenant_id=tenant_id, account_id=mine, amount=1, idempotency_key="k", request_hash="a"
        )
        two = withdraw(
            session, tenant_id=other, account_id=theirs, amount=1, idempotency_key="k", request_hash="b"
        )
        assert one.id != two.id


def test_sequence_is_gap_free_and_each_hash_covers_its_documented_fields(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    wallet = _funded_wallet(sessions, tenant_id, "ig88", 90)
    chain = 7 if chain_for(wallet) != 7 else 8  # not the deposit's chain, so that it counts from seq 1
    with unit_of_work(sessions) as session:
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="g").id
        for note in ("first", 'héllo "quoted"'):
            post_transaction(
                session, tenant_id=tenant_id, kind="ante", postings=[Posting(wallet, -9), Posting(pot, 9)],
                reference="game_1", metadata={"seat": 2, "note": note}, chain=chain,
            )  # fmt: skip
    with unit_of_work(sessions) as session:
        rows = session.scalars(
            select(JournalTransaction)
            .where(JournalTransaction.tenant_id == tenant_id, JournalTransaction.chain == chain)
            .order_by(JournalTransaction.seq)
        ).all()
        assert [row.seq for row in rows] == [1, 2]
        assert rows[0].prev_hash == "0" * 64
        assert rows[1].prev_hash == rows[0].hash
        ante = rows[1]
        postings = session.execute(
            text("SELECT account_id, amount, currency FROM posting WHERE transaction_id = :t ORDER BY leg"),
            {"t": ante.id},
        ).all()
        # Rebuilt by hand from the documented encoding: JCS is sorted keys, no spaces, UTF-8; a chain
        # other than 0 is hashed too.
        document = {
            "chain": chain,
            "created_at": ante.created_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "id": ante.id,
            "kind": "ante",
            "metadata": {"note": 'héllo "quoted"', "seat": 2},
            "postings": [{"account_id": a, "amount": m, "currency": c} for a, m, c in postings],
            "prev_hash": rows[0].hash,
            "reference": "game_1",
            "seq": 2,
            "tenant_id": tenant_id,
        }
        encoded = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        assert ante.hash == hashlib.sha256(encoded).hexdigest()


def test_post_transfers_is_all_or_nothing(sessions: sessionmaker[Session], tenant_id: str) -> None:
    rich = _funded_wallet(sessions, tenant_id, "jabba", 100)
    poor = _funded_wallet(sessions, tenant_id, "salacious", 3)
    with unit_of_work(sessions) as session:
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="game-9").id
        chain = chain_for("game-9")  # a game's transfers go on its reference's chain
        seq_before = _head_seq(session, tenant_id, chain)
        with pytest.raises(InsufficientFunds) as raised:
            post_transfers(
                session, tenant_id=tenant_id,
                transfers=[AccountTransfer("ante", rich, pot, 5), AccountTransfer("ante", poor, pot, 5)],
            )  # fmt: skip
        assert raised.value.account_id == poor
        assert _head_seq(session, tenant_id, chain) == seq_before
    with unit_of_work(sessions) as session:
        assert balance_of(session, rich) == 100
        posted = post_transfers(
            session, tenant_id=tenant_id, reference="game-9", idempotency_key="game-9/antes", request_hash="x",
            transfers=[
                AccountTransfer(TransactionKind.ANTE, rich, pot, 5),
                AccountTransfer(TransactionKind.ANTE, poor, pot, 3),
                AccountTransfer(TransactionKind.PAYOUT, pot, poor, 8),
            ],
        )  # fmt: skip
        assert [transaction.seq for transaction in posted] == [seq_before + 1, seq_before + 2, seq_before + 3]
        assert {transaction.chain for transaction in posted} == {chain}
        assert [transaction.kind for transaction in posted] == ["ante", "ante", "payout"]
    with unit_of_work(sessions) as session:
        assert (balance_of(session, rich), balance_of(session, poor), balance_of(session, pot)) == (95, 8, 0)
        replay = post_transfers(
            session, tenant_id=tenant_id, reference="game-9", idempotency_key="game-9/antes", request_hash="x",
            transfers=[AccountTransfer("ante", rich, pot, 5), AccountTransfer("ante", poor, pot, 3), AccountTransfer("payout", pot, poor, 8)],
        )  # fmt: skip
        assert [transaction.id for transaction in replay] == [transaction.id for transaction in posted]
        assert _head_seq(session, tenant_id, chain) == seq_before + 3


def test_post_transfers_answers_what_it_stored(sessions: sessionmaker[Session], tenant_id: str) -> None:
    """The answer (PostedTransaction) is the stored transaction, its identity and chain place included, posted
    or replayed; text that JSON must escape (control characters, quotes, backslashes, non-ASCII) is stored and
    hashed as given."""
    payer = _funded_wallet(sessions, tenant_id, "bossk", 50)
    metadata = {"note": 'ctl \x01\t\n "quoted" back\\slash é 🎲', "round": 2}
    reference = 'table "9" — é'
    with unit_of_work(sessions) as session:
        pot = open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="g-light").id
        transfers = [AccountTransfer("ante", payer, pot, 5), AccountTransfer("payout", pot, payer, 5)]
        posted = post_transfers(
            session, tenant_id=tenant_id, transfers=transfers, reference=reference, metadata=metadata,
            idempotency_key="g-light", request_hash="r",
        )  # fmt: skip
    with unit_of_work(sessions) as session:
        stored = [get_transaction(session, transaction.id, tenant_id=tenant_id) for transaction in posted]
        assert [
            (row.id, row.seq, row.kind, row.prev_hash, row.hash, row.idempotency_key, row.request_hash)
            for row in stored
        ] == [(t.id, t.seq, t.kind, t.prev_hash, t.hash, t.idempotency_key, t.request_hash) for t in posted]
        assert stored == posted
        assert posted[1].prev_hash == posted[0].hash
        assert all(row.metadata == metadata and row.reference == reference for row in stored)
        replay = post_transfers(
            session, tenant_id=tenant_id, transfers=transfers, reference=reference, metadata=metadata,
            idempotency_key="g-light", request_hash="r",
        )  # fmt: skip
        assert replay == posted
        assert reconcile(session, tenant_id, check_chain=True).ok


def test_reversal_is_a_new_transaction(sessions: sessionmaker[Session], tenant_id: str) -> None:
    wallet = _funded_wallet(sessions, tenant_id, "dengar", 40)
    with unit_of_work(sessions) as session:
        original = withdraw(session, tenant_id=tenant_id, account_id=wallet, amount=15)
    with unit_of_work(sessions) as session:
        reversal = reverse_transaction(session, tenant_id=tenant_id, transaction_id=original.id)
        assert reversal.kind == "reversal"
        assert reversal.reference == original.id
        assert [posting.amount for posting in reversal.postings] == [15, -15]
    with unit_of_work(sessions) as session:
        assert balance_of(session, wallet) == 40
        assert get_transaction(session, original.id).postings[0].amount == -15


def test_account_history_pages_newest_first(sessions: sessionmaker[Session], tenant_id: str) -> None:
    wallet = _funded_wallet(sessions, tenant_id, "4lom", 1000)
    with unit_of_work(sessions) as session:
        for amount in range(1, 6):
            withdraw(session, tenant_id=tenant_id, account_id=wallet, amount=amount)
    with unit_of_work(sessions) as session:
        first = transactions_of(session, wallet, limit=4)
        assert [entry.amount for entry in first.data] == [-5, -4, -3, -2]
        assert first.has_more
        second = transactions_of(session, wallet, limit=4, starting_after=first.next_cursor)
        assert [entry.amount for entry in second.data] == [-1, 1000]
        assert not second.has_more
        assert second.next_cursor is None


def test_an_external_id_names_one_account_per_kind(sessions: sessionmaker[Session], tenant_id: str) -> None:
    with unit_of_work(sessions) as session:
        first = _wallet(session, tenant_id, "boba")
        with pytest.raises(AccountExists) as raised:
            _wallet(session, tenant_id, "boba")
        assert raised.value.extensions["account_id"] == first
        open_account(session, tenant_id=tenant_id, kind="game_pot", external_id="boba")
        open_account(session, tenant_id=tenant_id, kind="player_wallet")
        open_account(session, tenant_id=tenant_id, kind="player_wallet")  # no external id: no uniqueness


def test_opening_an_account_for_an_unknown_tenant_is_refused_and_writes_nothing(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    with unit_of_work(sessions) as session:
        before = len(trial_balance(session, tenant_id).accounts)
        with pytest.raises(TenantNotFound):
            open_account(session, tenant_id="ten_nope", kind="player_wallet", external_id="greedo")
        # The refusal raised nothing in the database: the same unit of work goes on.
        _wallet(session, tenant_id, "greedo")
    with sessions() as session:
        assert len(trial_balance(session, tenant_id).accounts) == before + 1
        assert session.scalar(select(func.count()).where(Account.tenant_id == "ten_nope")) == 0


def test_reconcile_finds_nothing_wrong_with_service_written_books(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    wallet = _funded_wallet(sessions, tenant_id, "bib", 33)
    with unit_of_work(sessions) as session:
        withdraw(session, tenant_id=tenant_id, account_id=wallet, amount=3)
        report = reconcile(session, tenant_id, check_chain=True)
    assert report.ok, report


def test_an_account_rolled_back_after_a_posting_is_not_found_afterwards(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    """The service remembers an account's tenant and currency; the lock still finds it gone."""
    with pytest.raises(RuntimeError), unit_of_work(sessions) as session:  # noqa: PT012
        ghost = _wallet(session, tenant_id, "ghost")
        house = house_account(session, tenant_id).id
        post_transaction(
            session, tenant_id=tenant_id, kind="adjustment", postings=[Posting(house, -5), Posting(ghost, 5)]
        )
        raise RuntimeError("roll the wallet back")
    with unit_of_work(sessions) as session:
        house = house_account(session, tenant_id).id
        with pytest.raises(AccountNotFound) as raised:
            post_transaction(
                session,
                tenant_id=tenant_id,
                kind="adjustment",
                postings=[Posting(house, -5), Posting(ghost, 5)],
            )
        assert raised.value.extensions["account_id"] == ghost
        assert _head_seq(session, tenant_id) == 0
