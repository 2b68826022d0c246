"""The one way money moves: post balanced journal transactions, all or nothing.

Every function takes the caller's session and only writes; the caller's unit of work commits, so a game
action's state and its postings land together or not at all.

Concurrency: posting locks the head of one of the tenant's hash chains first (`ledger_head`, one row per
chain), then the involved accounts in ascending id order. Every writer takes locks in that one order, and a
unit of work posts on one chain only (the first posting's; see _unit_chain), so no two can deadlock, and the
head lock makes the chain's sequence gap-free and fork-free. The head stays locked until the caller commits,
so post as late in the unit of work as possible. Which chain: a deposit or withdrawal its wallet's, a game's
transfers their game's (chain.chain_for), a reversal its original's, anything else chain 0.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from pokna import metrics
from pokna.crypto.canonical_json import canonicalize
from pokna.ledger import repository
from pokna.ledger.accounts import follow_balances, funding_account_id, get_account
from pokna.ledger.announcements import announce_funding
from pokna.ledger.chain import chain_for
from pokna.ledger.drafts import Draft, check_batch_key, draft_of
from pokna.ledger.errors import InvalidPostings, TransactionNotFound
from pokna.ledger.model import AccountTransfer, PostedTransaction, Posting, TransactionKind, check_amount
from pokna.ledger.store import LedgerStore, Posted
from pokna.ledger.store_postgresql import PostgresqlLedgerStore
from pokna.outbox import SessionOutbox

_LEDGER_STORE: LedgerStore = PostgresqlLedgerStore()


def post_transaction(
    session: Session,
    *,
    tenant_id: str,
    kind: TransactionKind | str,
    postings: Sequence[Posting],
    reference: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
    chain: int = 0,
) -> PostedTransaction:
    """Post one balanced journal transaction, or nothing at all (on `chain`, unless the unit of work
    already posted on another: _unit_chain).

    Retrying with the same idempotency key and request hash returns the original transaction and posts
    nothing; the same key with a different request hash raises IdempotencyKeyReused. A wallet or pot that
    would go below zero raises InsufficientFunds naming it.
    """
    draft = draft_of(kind, postings, reference, metadata, idempotency_key, request_hash)
    return _post_drafts(session, tenant_id, [draft], None, chain).transactions[0]


def post_transfers(
    session: Session,
    *,
    tenant_id: str,
    transfers: Sequence[AccountTransfer],
    reference: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
    expected_balances: Mapping[str, int] | None = None,
) -> list[PostedTransaction]:
    """Post a game's transfers atomically: one two-leg journal transaction per transfer, in order.

    One transaction per transfer keeps every ante, contribution and payout individually visible to
    auditors. All transfers are checked against the running balances before anything is written, so a
    payer short of funds anywhere in the list means nothing is posted. With an idempotency key, transfer
    i is stored under `{key}:{i}`.

    `expected_balances` are the balances the caller decided the transfers on (read without a lock). Under
    the lock they are compared with the balances now held (of those accounts, which are locked too); if
    any differs, nothing is posted and BalancesChanged carries the held ones. The locks stay held until
    the caller's transaction ends, so deciding again on those and calling again cannot be overtaken.
    """
    if not transfers:
        return []
    if idempotency_key is not None:
        check_batch_key(idempotency_key)
    drafts = [
        draft_of(
            transfer.kind,
            transfer.postings(),
            reference,
            metadata,
            None if idempotency_key is None else f"{idempotency_key}:{index}",
            request_hash,
        )
        for index, transfer in enumerate(transfers)
    ]
    chain = 0 if reference is None else chain_for(reference)
    return _post_drafts(session, tenant_id, drafts, expected_balances, chain).transactions


def deposit(
    session: Session,
    *,
    tenant_id: str,
    account_id: str,
    amount: int,
    reference: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
) -> PostedTransaction:
    """Credits enter: +amount on the wallet, -amount on the tenant's external funding (the sub-account of
    the chain it posts on)."""
    return _funding_transfer(
        session, TransactionKind.DEPOSIT, tenant_id, account_id, amount, reference, metadata,
        idempotency_key, request_hash,
    )  # fmt: skip


def withdraw(
    session: Session,
    *,
    tenant_id: str,
    account_id: str,
    amount: int,
    reference: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
) -> PostedTransaction:
    """Credits leave: -amount on the wallet (never below zero), +amount on external funding."""
    return _funding_transfer(
        session, TransactionKind.WITHDRAWAL, tenant_id, account_id, -amount if isinstance(amount, int) else amount,
        reference, metadata, idempotency_key, request_hash,
    )  # fmt: skip


def _funding_transfer(
    session: Session,
    kind: TransactionKind,
    tenant_id: str,
    account_id: str,
    signed_amount: int,
    reference: str | None,
    metadata: Mapping[str, Any] | None,
    idempotency_key: str | None,
    request_hash: str | None,
) -> PostedTransaction:
    check_amount(signed_amount)
    if (kind is TransactionKind.DEPOSIT) != (signed_amount > 0):
        raise InvalidPostings(f"a {kind} moves a positive amount")
    wallet = get_account(session, account_id, tenant_id=tenant_id)
    # The funding sub-account of the chain the posting goes on (a unit of work that already posted keeps
    # its chain), so that deposits on different chains lock different funding accounts.
    chain = _unit_chain(session, chain_for(wallet.id))
    funding_id = funding_account_id(session, tenant_id, wallet.currency, chain)
    postings = [Posting(wallet.id, signed_amount), Posting(funding_id, -signed_amount)]
    draft = draft_of(kind, postings, reference, metadata, idempotency_key, request_hash)
    posted = _post_drafts(session, tenant_id, [draft], None, chain)
    transaction = posted.transactions[0]
    if posted.balances:  # a retry answers the original, posts nothing and announces nothing
        announce_funding(
            SessionOutbox(session), transaction, wallet.id, wallet.currency, posted.balances[wallet.id]
        )
    return transaction


def reverse_transaction(
    session: Session,
    *,
    tenant_id: str,
    transaction_id: str,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
) -> PostedTransaction:
    """Corrections are new transactions: post the negation of `transaction_id`, referencing it."""
    original = repository.get_transaction(session, transaction_id, tenant_id)
    if original is None:
        raise TransactionNotFound(f"no journal transaction {transaction_id}", transaction_id=transaction_id)
    return post_transaction(
        session,
        tenant_id=tenant_id,
        kind=TransactionKind.REVERSAL,
        postings=[Posting(posting.account_id, -posting.amount) for posting in original.postings],
        reference=original.id,
        metadata=metadata,
        idempotency_key=idempotency_key,
        request_hash=request_hash,
        chain=original.chain,
    )


def request_fingerprint(document: Mapping[str, Any]) -> str:
    """A convenient request_hash: SHA-256 of the request's canonical JSON."""
    return hashlib.sha256(canonicalize(document)).hexdigest()


def _post_drafts(
    session: Session,
    tenant_id: str,
    drafts: list[Draft],
    expected_balances: Mapping[str, int] | None,
    chain: int,
) -> Posted:
    """The one write path of every posting function (so the one place it is counted)."""
    started = time.perf_counter()
    chain = _unit_chain(session, chain)
    posted = _LEDGER_STORE.post(session, tenant_id, drafts, expected_balances or {}, chain)
    metrics.ledger_posted(len(posted.transactions), time.perf_counter() - started)
    follow_balances(session, tenant_id, posted.balances)
    return posted


_UNIT_CHAIN = "pokna.ledger.chain"


def _unit_chain(session: Session, chain: int) -> int:
    """The chain a posting of this unit of work goes on: the one its first posting took, else `chain`.

    A posting holds its chain's head until the unit of work commits; a second posting on another chain
    would wait for a second head while holding the first, and two such units could wait on each other.
    One chain per unit of work keeps the one lock order (a head, then accounts by ascending id). A unit
    that posts twice still takes the second posting's accounts after the first's: lock them all first
    (repository.lock_accounts) if they are not the same accounts."""
    session.connection()  # begins the unit's transaction, so that the unit has an identity to remember
    unit = session.get_transaction()
    held = session.info.get(_UNIT_CHAIN)
    if held is not None and held[0] is unit:
        return int(held[1])
    session.info[_UNIT_CHAIN] = (unit, chain)
    return chain
