"""The one way money moves: open accounts, post balanced transactions, read balances.

Every function takes the caller's session and only flushes; the caller's unit of work commits, so a game
action's state and its postings land together or not at all.

Concurrency: posting locks the tenant's `ledger_head` row first, then the involved accounts in ascending id
order. Every writer takes locks in that one order, so no two can deadlock, and the head lock makes the
tenant's sequence gap-free and its hash chain fork-free. The head stays locked until the caller commits,
so post as late in the unit of work as possible.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session, make_transient_to_detached
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from pokna.db.models.ledger import Account, JournalPosting, JournalTransaction
from pokna.db.types import new_id, utc_now
from pokna.ledger import repository
from pokna.ledger.chain import document_hash, format_timestamp, transaction_document
from pokna.ledger.errors import (
    AccountExists,
    AccountNotFound,
    IdempotencyKeyReused,
    InsufficientFunds,
    InvalidAccount,
    InvalidPostings,
    TenantNotFound,
    TransactionNotFound,
)
from pokna.ledger.model import (
    DEFAULT_CURRENCY,
    AccountKind,
    Move,
    Posting,
    TransactionKind,
    check_amount,
    check_currency,
    check_metadata,
    check_new_balance,
    check_postings,
)

MAX_TEXT = 200
MAX_IDEMPOTENCY_KEY = 180  # leaves room for the per-move suffix post_transfers adds


# --- accounts ------------------------------------------------------------------------------------------


def open_account(
    session: Session,
    *,
    tenant_id: str,
    kind: AccountKind | str,
    currency: str = DEFAULT_CURRENCY,
    external_id: str | None = None,
) -> Account:
    """A new account with balance 0. An external id is unique per tenant and kind (AccountExists)."""
    account_kind = _account_kind(kind)
    check_currency(currency)
    if external_id is not None and not 0 < len(external_id) <= MAX_TEXT:
        raise InvalidAccount(f"external_id must be 1-{MAX_TEXT} characters", field="external_id")
    if not repository.tenant_exists(session, tenant_id):
        raise TenantNotFound(f"no tenant {tenant_id}", tenant_id=tenant_id)
    if external_id is not None and (
        existing := repository.find_account(session, tenant_id, account_kind.value, external_id)
    ):
        raise AccountExists(
            f"tenant {tenant_id} already has a {account_kind} account for {external_id!r}",
            account_id=existing.id,
        )
    account = Account(
        id=new_id("acct"),
        tenant_id=tenant_id,
        kind=account_kind.value,
        currency=currency,
        external_id=external_id,
        balance=0,
        created_at=utc_now(),
    )
    session.add(account)
    session.flush()
    return account


def funding_account(session: Session, tenant_id: str, currency: str = DEFAULT_CURRENCY) -> Account:
    """The tenant's external funding account: the other side of every deposit and withdrawal."""
    return _system_account(session, tenant_id, AccountKind.EXTERNAL_FUNDING, currency)


def house_account(session: Session, tenant_id: str, currency: str = DEFAULT_CURRENCY) -> Account:
    return _system_account(session, tenant_id, AccountKind.HOUSE, currency)


def _system_account(session: Session, tenant_id: str, kind: AccountKind, currency: str) -> Account:
    """Created on demand, race-free: one per tenant, kind and currency (the currency is its external id)."""
    check_currency(currency)
    found = repository.find_account(session, tenant_id, kind.value, currency)
    if found is not None:
        return found
    if not repository.tenant_exists(session, tenant_id):
        raise TenantNotFound(f"no tenant {tenant_id}", tenant_id=tenant_id)
    repository.insert_ignoring_conflict(
        session,
        Account.__table__,
        {
            "id": new_id("acct"),
            "tenant_id": tenant_id,
            "kind": kind.value,
            "currency": currency,
            "external_id": currency,
            "balance": 0,
            "created_at": utc_now(),
        },
        ["tenant_id", "kind", "external_id"],
    )
    found = repository.find_account(session, tenant_id, kind.value, currency)
    assert found is not None
    return found


def get_account(session: Session, account_id: str, *, tenant_id: str | None = None) -> Account:
    account = session.get(Account, account_id)
    if account is None or (tenant_id is not None and account.tenant_id != tenant_id):
        raise AccountNotFound(f"no account {account_id}", account_id=account_id)
    return account


def find_account(session: Session, *, tenant_id: str, kind: AccountKind | str, external_id: str) -> Account:
    account = repository.find_account(session, tenant_id, _account_kind(kind).value, external_id)
    if account is None:
        raise AccountNotFound(f"no {kind} account for {external_id!r}", external_id=external_id)
    return account


def balance_of(session: Session, account_id: str) -> int:
    balance = repository.account_balance(session, account_id)
    if balance is None:
        raise AccountNotFound(f"no account {account_id}", account_id=account_id)
    return balance


def _account_kind(kind: AccountKind | str) -> AccountKind:
    try:
        return AccountKind(kind)
    except ValueError:
        known = ", ".join(member.value for member in AccountKind)
        raise InvalidAccount(f"account kind {kind!r} is not one of {known}", field="kind") from None


# --- posting -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Draft:
    kind: str
    postings: tuple[Posting, ...]
    reference: str | None
    metadata: dict[str, Any]
    idempotency_key: str | None
    request_hash: str | None


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
) -> JournalTransaction:
    """Post one balanced journal transaction, or nothing at all.

    Retrying with the same idempotency key and request hash returns the original transaction and posts
    nothing; the same key with a different request hash raises IdempotencyKeyReused. A wallet or pot that
    would go below zero raises InsufficientFunds naming it.
    """
    draft = _draft(kind, postings, reference, metadata, idempotency_key, request_hash)
    return _post(session, tenant_id, [draft])[0]


def post_transfers(
    session: Session,
    *,
    tenant_id: str,
    moves: Sequence[Move],
    reference: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
) -> list[JournalTransaction]:
    """Post a game's money moves atomically: one two-leg journal transaction per move, in order.

    One transaction per move keeps every ante, contribution and payout individually visible to auditors.
    All moves are checked against the running balances before anything is written, so a payer short of
    funds anywhere in the list means nothing is posted. With an idempotency key, move i is stored under
    `{key}:{i}`.
    """
    if not moves:
        return []
    if idempotency_key is not None:
        _check_key(idempotency_key)
    drafts = [
        _draft(
            move.kind,
            move.postings(),
            reference,
            metadata,
            None if idempotency_key is None else f"{idempotency_key}:{index}",
            request_hash,
        )
        for index, move in enumerate(moves)
    ]
    return _post(session, tenant_id, drafts)


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
) -> JournalTransaction:
    """Credits enter: +amount on the wallet, -amount on the tenant's external funding account."""
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
) -> JournalTransaction:
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
) -> JournalTransaction:
    check_amount(signed_amount)
    if (kind is TransactionKind.DEPOSIT) != (signed_amount > 0):
        raise InvalidPostings(f"a {kind} moves a positive amount")
    wallet = get_account(session, account_id, tenant_id=tenant_id)
    funding = funding_account(session, tenant_id, wallet.currency)
    return post_transaction(
        session,
        tenant_id=tenant_id,
        kind=kind,
        postings=[Posting(wallet.id, signed_amount), Posting(funding.id, -signed_amount)],
        reference=reference,
        metadata=metadata,
        idempotency_key=idempotency_key,
        request_hash=request_hash,
    )


def reverse_transaction(
    session: Session,
    *,
    tenant_id: str,
    transaction_id: str,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
) -> JournalTransaction:
    """Corrections are new transactions: post the negation of `transaction_id`, referencing it."""
    original = repository.get_transaction(session, transaction_id)
    if original is None or original.tenant_id != tenant_id:
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
    )


def _draft(
    kind: TransactionKind | str,
    postings: Sequence[Posting],
    reference: str | None,
    metadata: Mapping[str, Any] | None,
    idempotency_key: str | None,
    request_hash: str | None,
) -> _Draft:
    try:
        transaction_kind = TransactionKind(kind)
    except ValueError:
        raise InvalidPostings(f"transaction kind {kind!r} is unknown") from None
    if reference is not None and not 0 < len(reference) <= MAX_TEXT:
        raise InvalidPostings(f"reference must be 1-{MAX_TEXT} characters")
    if idempotency_key is not None and not 0 < len(idempotency_key) <= MAX_TEXT:
        raise InvalidPostings(f"idempotency_key must be 1-{MAX_TEXT} characters")
    if request_hash is not None and not 0 < len(request_hash) <= 128:
        raise InvalidPostings("request_hash must be 1-128 characters")
    for index, posting in enumerate(postings):
        check_amount(posting.amount, f"postings[{index}].amount")
    return _Draft(
        transaction_kind.value,
        tuple(postings),
        reference,
        check_metadata(metadata),
        idempotency_key,
        request_hash,
    )


def _check_key(idempotency_key: str) -> None:
    if not 0 < len(idempotency_key) <= MAX_IDEMPOTENCY_KEY:
        raise InvalidPostings(f"idempotency_key must be 1-{MAX_IDEMPOTENCY_KEY} characters")


def _post(session: Session, tenant_id: str, drafts: list[_Draft]) -> list[JournalTransaction]:
    account_ids = _account_ids(drafts)
    postgresql = repository.is_postgresql(session)
    locked: list[Any] | None = None
    if postgresql:
        head, locked = repository.lock_head_and_accounts_postgresql(session, tenant_id, account_ids)
        if head is None:
            _create_head(session, tenant_id)
            head, locked = repository.lock_head_and_accounts_postgresql(session, tenant_id, account_ids)
    else:
        head = repository.lock_head(session, tenant_id)
        if head is None:
            _create_head(session, tenant_id)
            head = repository.lock_head(session, tenant_id)
    assert head is not None
    last_seq, last_hash = head

    keys = [draft.idempotency_key for draft in drafts if draft.idempotency_key is not None]
    if keys:
        replayed = _replay(session, tenant_id, drafts, keys)
        if replayed is not None:
            return replayed

    if locked is None:
        locked = repository.lock_accounts(session, account_ids)
    accounts = {row.id: row for row in locked}
    balances = {account_id: int(row.balance) for account_id, row in accounts.items()}
    for draft in drafts:
        _apply(draft, tenant_id, accounts, balances)

    written: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for draft in drafts:
        row, posting_rows = _rows(tenant_id, draft, last_seq + 1, last_hash, accounts)
        last_seq, last_hash = row["seq"], row["hash"]
        written.append((row, posting_rows))
    if postgresql:
        repository.write_postgresql(
            session,
            tenant_id,
            [row for row, _ in written],
            [posting for _, posting_rows in written for posting in posting_rows],
        )
    else:
        # SQLite's chain trigger checks each transaction's predecessor is complete: one at a time.
        for row, posting_rows in written:
            repository.insert_transaction(session, row, posting_rows)
        repository.advance_head(session, tenant_id, last_seq, last_hash)
    _refresh_loaded_balances(session, balances)
    return [_attach(session, row, posting_rows) for row, posting_rows in written]


def _create_head(session: Session, tenant_id: str) -> None:
    if not repository.tenant_exists(session, tenant_id):
        raise TenantNotFound(f"no tenant {tenant_id}", tenant_id=tenant_id)
    repository.create_head(session, tenant_id)


def _replay(
    session: Session, tenant_id: str, drafts: list[_Draft], keys: list[str]
) -> list[JournalTransaction] | None:
    """The originals if every key was used by this same request; None if none was; else refuse."""
    found = {
        transaction.idempotency_key: transaction
        for transaction in repository.transactions_by_idempotency_key(session, tenant_id, keys)
    }
    if not found:
        return None
    for draft in drafts:
        original = found.get(draft.idempotency_key)
        if original is None or original.request_hash != draft.request_hash:
            raise IdempotencyKeyReused(
                f"idempotency key {draft.idempotency_key!r} was already used for a different request",
                idempotency_key=draft.idempotency_key,
            )
    return [found[draft.idempotency_key] for draft in drafts]


def _account_ids(drafts: list[_Draft]) -> set[str]:
    return {posting.account_id for draft in drafts for posting in draft.postings}


def _apply(draft: _Draft, tenant_id: str, accounts: Mapping[str, Any], balances: dict[str, int]) -> None:
    for posting in draft.postings:
        row = accounts.get(posting.account_id)
        if row is None or row.tenant_id != tenant_id:
            raise AccountNotFound(
                f"tenant {tenant_id} has no account {posting.account_id}", account_id=posting.account_id
            )
    check_postings(draft.postings, {account_id: row.currency for account_id, row in accounts.items()})
    for posting in draft.postings:
        row = accounts[posting.account_id]
        new_balance = balances[posting.account_id] + posting.amount
        check_new_balance(posting.account_id, new_balance)
        if new_balance < 0 and not AccountKind(row.kind).may_go_negative:
            raise InsufficientFunds(posting.account_id, balances[posting.account_id], posting.amount)
        balances[posting.account_id] = new_balance


def _rows(
    tenant_id: str,
    draft: _Draft,
    seq: int,
    prev_hash: str,
    accounts: Mapping[str, Any],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The transaction's row, hash-chained onto `prev_hash`, and its posting rows."""
    transaction_id = new_id("txn")
    created_at = utc_now()
    legs = [
        (posting.account_id, posting.amount, str(accounts[posting.account_id].currency))
        for posting in draft.postings
    ]
    hash_ = document_hash(
        transaction_document(
            seq=seq,
            prev_hash=prev_hash,
            tenant_id=tenant_id,
            transaction_id=transaction_id,
            kind=draft.kind,
            reference=draft.reference,
            metadata=draft.metadata,
            created_at=format_timestamp(created_at),
            postings=legs,
        )
    )
    row = {
        "id": transaction_id,
        "tenant_id": tenant_id,
        "seq": seq,
        "kind": draft.kind,
        "reference": draft.reference,
        "metadata": draft.metadata,
        "idempotency_key": draft.idempotency_key,
        "request_hash": draft.request_hash,
        "posting_count": len(legs),
        "prev_hash": prev_hash,
        "hash": hash_,
        "created_at": created_at,
    }
    posting_rows = [
        {
            "id": new_id("pst"),
            "transaction_id": transaction_id,
            "leg": leg,
            "account_id": account_id,
            "amount": amount,
            "currency": currency,
        }
        for leg, (account_id, amount, currency) in enumerate(legs)
    ]
    return row, posting_rows


def _attach(session: Session, row: dict[str, Any], posting_rows: list[dict[str, Any]]) -> JournalTransaction:
    """The ORM objects of rows written with Core, made persistent in the session without another query."""
    values = {key: value for key, value in row.items() if key != "metadata"}
    transaction = JournalTransaction(**values, metadata_=row["metadata"])
    postings = [JournalPosting(**posting) for posting in posting_rows]
    for instance in (transaction, *postings):
        make_transient_to_detached(instance)
        session.add(instance)
    set_committed_value(transaction, "postings", postings)
    return transaction


def _refresh_loaded_balances(session: Session, balances: Mapping[str, int]) -> None:
    """Accounts already loaded in the session see the balances the database trigger just wrote."""
    for account_id, balance in balances.items():
        account = session.identity_map.get(identity_key(Account, account_id))
        if account is not None:
            set_committed_value(account, "balance", balance)


def request_fingerprint(document: Mapping[str, Any]) -> str:
    """A convenient request_hash: SHA-256 of the request's canonical JSON."""
    from pokna.fairness.canonical_json import canonicalize

    return hashlib.sha256(canonicalize(document)).hexdigest()


# --- reading -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AccountEntry:
    """One posting on an account, with its transaction's identity."""

    transaction_id: str
    seq: int
    kind: str
    reference: str | None
    created_at: datetime
    amount: int
    currency: str


@dataclass(frozen=True)
class AccountEntryPage:
    entries: list[AccountEntry]
    has_more: bool

    @property
    def next_cursor(self) -> str | None:
        return self.entries[-1].transaction_id if self.has_more and self.entries else None


def transactions_of(
    session: Session, account_id: str, *, limit: int = 50, starting_after: str | None = None
) -> AccountEntryPage:
    """The account's postings, newest first; `starting_after` is the last transaction id of the previous page."""
    if not 1 <= limit <= 500:
        raise InvalidPostings("limit must be between 1 and 500")
    if repository.account_balance(session, account_id) is None:
        raise AccountNotFound(f"no account {account_id}", account_id=account_id)
    before_seq = None
    if starting_after is not None:
        before_seq = repository.transaction_seq(session, starting_after, account_id)
        if before_seq is None:
            raise TransactionNotFound(
                f"no journal transaction {starting_after}", transaction_id=starting_after
            )
    rows = repository.account_entries(session, account_id, before_seq=before_seq, limit=limit + 1)
    entries = [
        AccountEntry(
            transaction_id=row.id,
            seq=int(row.seq),
            kind=row.kind,
            reference=row.reference,
            created_at=row.created_at,
            amount=int(row.amount),
            currency=row.currency,
        )
        for row in rows[:limit]
    ]
    return AccountEntryPage(entries, has_more=len(rows) > limit)


def get_transaction(
    session: Session, transaction_id: str, *, tenant_id: str | None = None
) -> JournalTransaction:
    transaction = repository.get_transaction(session, transaction_id)
    if transaction is None or (tenant_id is not None and transaction.tenant_id != tenant_id):
        raise TransactionNotFound(f"no journal transaction {transaction_id}", transaction_id=transaction_id)
    return transaction


@dataclass(frozen=True)
class AccountBalance:
    account_id: str
    kind: str
    external_id: str | None
    balance: int


@dataclass(frozen=True)
class TrialBalance:
    """Every account of one tenant and currency; `total` is zero whenever the books are sound."""

    tenant_id: str
    currency: str
    accounts: list[AccountBalance]

    @property
    def total(self) -> int:
        return sum(account.balance for account in self.accounts)


def trial_balance(session: Session, tenant_id: str, currency: str = DEFAULT_CURRENCY) -> TrialBalance:
    accounts = repository.tenant_accounts(session, tenant_id, currency)
    return TrialBalance(
        tenant_id,
        currency,
        [
            AccountBalance(account.id, account.kind, account.external_id, account.balance)
            for account in accounts
        ],
    )


@dataclass(frozen=True)
class BalanceDifference:
    account_id: str
    tenant_id: str
    stored: int
    computed: int


@dataclass(frozen=True)
class ReconcileReport:
    """What reconcile found. `ok` means no drift, no unbalanced transaction and (if checked) a sound chain."""

    differences: list[BalanceDifference]
    unbalanced_transactions: list[tuple[str, int, str]] = field(default_factory=list)
    chain_problems: list[tuple[str, int | None, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.differences or self.unbalanced_transactions or self.chain_problems)


def reconcile(
    session: Session, tenant_id: str | None = None, *, check_chain: bool = False
) -> ReconcileReport:
    """Compare every stored balance with the sum of its postings; optionally re-verify each hash chain.

    On PostgreSQL the triggers make drift impossible short of disabling them; on SQLite this is the check
    that catches what SQLite's triggers cannot refuse (docs/ledger.md).
    """
    differences = [
        BalanceDifference(row.id, row.tenant_id, int(row.balance), int(row.computed))
        for row in repository.balance_differences(session, tenant_id)
    ]
    unbalanced = [
        (row.tenant_id, int(row.seq), row.id)
        for row in repository.unbalanced_transactions(session, tenant_id)
    ]
    problems: list[tuple[str, int | None, str]] = []
    if check_chain:
        from pokna.ledger.audit import verify_export
        from pokna.ledger.export import export_jsonl

        tenants = [tenant_id] if tenant_id is not None else repository.tenant_ids_with_ledgers(session)
        for tenant in tenants:
            report = verify_export(export_jsonl(session, tenant))
            problems.extend((tenant, finding.seq, finding.problem) for finding in report.findings)
    return ReconcileReport(differences, unbalanced, problems)
