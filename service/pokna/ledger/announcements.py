"""What the ledger tells the tenant's webhooks: the one place a deposit or a withdrawal is recorded in the
outbox, in the transaction that posts it (so a refused or rolled-back movement emits nothing).

Ordered per wallet: a wallet's deposits and withdrawals are on its chain, whose head a posting holds until
the commit, so record order is commit order."""

from __future__ import annotations

from pokna.ledger.model import PostedTransaction, TransactionKind
from pokna.outbox import Recorder
from pokna.outbox.events import DepositPosted, LedgerMovementData, WithdrawalPosted


def announce_funding(
    outbox: Recorder, transaction: PostedTransaction, wallet_id: str, currency: str, balance: int
) -> None:
    moved = next(posting.amount for posting in transaction.postings if posting.account_id == wallet_id)
    data = LedgerMovementData(
        account_id=wallet_id,
        amount=abs(moved),
        currency=currency,
        balance=balance,
        journal_transaction_id=transaction.id,
        ledger_chain=transaction.chain,
        ledger_seq=transaction.seq,
        reference=transaction.reference,
        posted_at=transaction.created_at,
    )
    event: DepositPosted | WithdrawalPosted = (
        DepositPosted(timestamp=transaction.created_at, data=data)
        if transaction.kind == TransactionKind.DEPOSIT
        else WithdrawalPosted(timestamp=transaction.created_at, data=data)
    )
    outbox.record(wallet_id, event)
