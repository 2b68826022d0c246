"""The one way money moves: open accounts, post balanced transactions, read balances.

Every function takes the caller's session and only flushes; the caller's unit of work commits, so a game
action's state and its postings land together or not at all.

Concurrency: posting locks the tenant's `ledger_head` row first, then the involved accounts in ascending id
order. Every writer takes locks in that one order, so no two can deadlock, and the head lock makes the
tenant's sequence gap-free and its hash chain fork-free. The head stays locked until the caller commits,
so post as late in the unit of work as possible.

On PostgreSQL everything that needs no lock happens before the lock is taken (validation, ids, timestamps,
the hashed bytes around seq and prev_hash), and one call to the ledger_post() function takes the locks,
checks the balances, hashes, writes and advances the head (migrations/versions/0005_ledger_post_json.py).
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy.orm import Session, make_transient_to_detached
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from pokna.db.models.ledger import Account, JournalPosting, JournalTransaction
from pokna.db.types import new_id, utc_now
from pokna.ledger import repository
from pokna.ledger.chain import format_timestamp, hash_from_parts, hash_parts
from pokna.ledger.errors import (
    AccountExists,
    AccountNotFound,
    BalancesChanged,
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
    PostedTransaction,
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
    values = {
        "id": new_id("acct"),
        "tenant_id": tenant_id,
        "kind": account_kind.value,
        "currency": currency,
        "external_id": external_id,
        "balance": 0,
        "created_at": utc_now(),
    }
    # One statement in the usual case; only a refusal costs the queries that say why. The insert's
    # snapshot may predate a tenant committed meanwhile: then neither reason holds, and it runs again.
    for attempt in range(2):
        if repository.insert_account(session, values):
            break
        if not repository.tenant_exists(session, tenant_id):
            raise TenantNotFound(f"no tenant {tenant_id}", tenant_id=tenant_id)
        existing = repository.find_account(session, tenant_id, account_kind.value, str(external_id))
        if existing is not None or attempt == 1:
            raise AccountExists(
                f"tenant {tenant_id} already has a {account_kind} account for {external_id!r}",
                account_id=None if existing is None else existing.id,
            )
    account = Account(**values)
    make_transient_to_detached(account)
    session.add(account)
    _remember_accounts(session, {account.id: (tenant_id, currency)})
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


@dataclass(frozen=True)
class AccountSummary:
    """What another domain may know of an account: what it is and what it holds (read without a lock)."""

    id: str
    kind: str
    currency: str
    balance: int


def account_summaries(
    session: Session, tenant_id: str, account_ids: Sequence[str]
) -> dict[str, AccountSummary]:
    """The tenant's accounts among `account_ids`, by id, in one query; another tenant's are absent."""
    return {
        row.id: AccountSummary(row.id, row.kind, row.currency, int(row.balance))
        for row in repository.account_summaries(session, tenant_id, account_ids)
    }


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
    return _journal_transactions(session, _post(session, tenant_id, [draft], with_objects=True))[0]


def post_transfers(
    session: Session,
    *,
    tenant_id: str,
    moves: Sequence[Move],
    reference: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
    expected_balances: Mapping[str, int] | None = None,
) -> list[PostedTransaction]:
    """Post a game's money moves atomically: one two-leg journal transaction per move, in order.

    One transaction per move keeps every ante, contribution and payout individually visible to auditors.
    All moves are checked against the running balances before anything is written, so a payer short of
    funds anywhere in the list means nothing is posted. With an idempotency key, move i is stored under
    `{key}:{i}`.

    `expected_balances` are the balances the caller decided the moves on (read without a lock). Under the
    lock they are compared with the balances now held (of those accounts, which are locked too); if any
    differs, nothing is posted and BalancesChanged carries the held ones. The locks stay held until the
    caller's transaction ends, so deciding again on those and calling again cannot be overtaken.

    Answers each transaction's identity and place in the chain, not ORM objects: a game posts on every
    action and records only ids and seqs (get_transaction loads one whole).
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
    return _posted_transactions(_post(session, tenant_id, drafts, expected_balances))


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
    if reference is not None and "\x00" in reference:
        raise InvalidPostings("reference must not contain the NUL character (PostgreSQL text cannot)")
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


class _Written(NamedTuple):
    """A transaction written by this call: its row (with seq, prev_hash and hash) and its posting rows, and
    the ORM objects for them when the caller wants those (built before the head lock is taken)."""

    row: dict[str, Any]
    postings: list[dict[str, Any]]
    objects: tuple[JournalTransaction, list[JournalPosting]] | None


class _Posted(NamedTuple):
    """What one posting did: wrote `written`, or found every idempotency key used and wrote nothing."""

    written: list[_Written]
    replayed: list[JournalTransaction] | None = None


def _post(
    session: Session,
    tenant_id: str,
    drafts: list[_Draft],
    expected_balances: Mapping[str, int] | None = None,
    *,
    with_objects: bool = False,
) -> _Posted:
    """The one write path of both public posting functions, on both backends."""
    expected = dict(expected_balances or {})
    if repository.is_postgresql(session):
        return _post_postgresql(session, tenant_id, drafts, expected, with_objects)
    return _post_sqlite(session, tenant_id, drafts, expected, with_objects)


def _journal_transactions(session: Session, posted: _Posted) -> list[JournalTransaction]:
    """The written transactions as ORM objects, persistent in the session without another query."""
    if posted.replayed is not None:
        return posted.replayed
    transactions = []
    for written in posted.written:
        assert written.objects is not None
        transaction, postings = written.objects
        transaction.seq = written.row["seq"]
        transaction.prev_hash = written.row["prev_hash"]
        transaction.hash = written.row["hash"]
        _attach(session, transaction, postings)
        transactions.append(transaction)
    return transactions


def _posted_transactions(posted: _Posted) -> list[PostedTransaction]:
    if posted.replayed is not None:
        return [
            PostedTransaction(*(getattr(transaction, name) for name in PostedTransaction._fields))
            for transaction in posted.replayed
        ]
    return [
        PostedTransaction(*(row[name] for name in PostedTransaction._fields)) for row, _, _ in posted.written
    ]


def _post_postgresql(
    session: Session, tenant_id: str, drafts: list[_Draft], expected: dict[str, int], with_objects: bool
) -> _Posted:
    """Everything that needs no lock first (validation, ids, timestamps, the hashed bytes, the ORM objects
    if wanted), then one round trip to ledger_post() for what does. The head is held from there to the
    caller's commit."""
    account_ids = sorted(_account_ids(drafts) | expected.keys())
    accounts = _tenants_and_currencies(session, account_ids)
    for account_id in [posting.account_id for draft in drafts for posting in draft.postings] + list(expected):
        if accounts.get(account_id, ("", ""))[0] != tenant_id:
            if not repository.tenant_exists(session, tenant_id):
                raise TenantNotFound(f"no tenant {tenant_id}", tenant_id=tenant_id)
            raise AccountNotFound(f"tenant {tenant_id} has no account {account_id}", account_id=account_id)
    currency_of = {account_id: currency for account_id, (_, currency) in accounts.items()}
    for draft in drafts:
        check_postings(draft.postings, currency_of)
    unchained = [_unchained_rows(tenant_id, draft, currency_of) for draft in drafts]
    written = [
        _Written(row, posting_rows, _orm_objects(row, posting_rows) if with_objects else None)
        for row, posting_rows, _ in unchained
    ]

    outcome = repository.post_postgresql(
        session, tenant_id=tenant_id, batch=_batch(account_ids, expected, unchained)
    )
    if outcome.status != "posted":
        keys = [draft.idempotency_key for draft in drafts if draft.idempotency_key is not None]
        return _Posted([], _refusal(session, tenant_id, drafts, keys, expected, outcome))
    assert outcome.first_seq is not None
    assert outcome.first_prev_hash is not None
    assert outcome.hashes is not None
    seq, prev_hash = outcome.first_seq, outcome.first_prev_hash
    for (row, _, _), hash_ in zip(written, outcome.hashes, strict=True):
        row["seq"], row["prev_hash"], row["hash"] = seq, prev_hash, hash_
        seq, prev_hash = seq + 1, hash_
    _refresh_loaded_balances(session, _held(outcome))
    return _Posted(written)


def _batch(
    account_ids: list[str],
    expected: Mapping[str, int],
    unchained: list[tuple[dict[str, Any], list[dict[str, Any]], tuple[bytes, bytes, bytes]]],
) -> dict[str, Any]:
    """The document ledger_post() reads: arrays by column (migrations/versions/0005_ledger_post_json.py)."""
    rows = [row for row, _, _ in unchained]
    posting_rows = [
        (index, posting) for index, (_, postings, _) in enumerate(unchained, start=1) for posting in postings
    ]
    return {
        "accounts": account_ids,
        "expected_ids": list(expected),
        "expected_balances": list(expected.values()),
        "t_id": [row["id"] for row in rows],
        "t_kind": [row["kind"] for row in rows],
        "t_reference": [row["reference"] for row in rows],
        "t_metadata": [json.dumps(row["metadata"]) for row in rows],
        "t_idempotency_key": [row["idempotency_key"] for row in rows],
        "t_request_hash": [row["request_hash"] for row in rows],
        "t_posting_count": [row["posting_count"] for row in rows],
        "t_created_at": [format_timestamp(row["created_at"]) for row in rows],
        "t_before_prev": ["\\x" + parts[0].hex() for _, _, parts in unchained],
        "t_before_seq": ["\\x" + parts[1].hex() for _, _, parts in unchained],
        "t_rest": ["\\x" + parts[2].hex() for _, _, parts in unchained],
        "p_id": [posting["id"] for _, posting in posting_rows],
        "p_transaction": [index for index, _ in posting_rows],
        "p_leg": [posting["leg"] for _, posting in posting_rows],
        "p_account_id": [posting["account_id"] for _, posting in posting_rows],
        "p_amount": [posting["amount"] for _, posting in posting_rows],
        "p_currency": [posting["currency"] for _, posting in posting_rows],
    }


# Per database: account id -> (tenant_id, currency). Neither ever changes (trg_account_guard) and ids are
# random, never reused, so an entry can be missing but never wrong; ledger_post() still checks under the
# lock that each account exists in the tenant, and the posting trigger that its currency is the posting's.
_ACCOUNT_ATTRIBUTES: weakref.WeakKeyDictionary[Any, dict[str, tuple[str, str]]] = weakref.WeakKeyDictionary()
_ACCOUNT_ATTRIBUTES_LIMIT = 100_000


def _known_accounts(session: Session) -> dict[str, tuple[str, str]]:
    bind = session.get_bind()
    return _ACCOUNT_ATTRIBUTES.setdefault(getattr(bind, "engine", bind), {})


def _remember_accounts(session: Session, attributes: Mapping[str, tuple[str, str]]) -> None:
    """An account opened here is known at once (a game's pot is posted to in its first action). Should
    the opening roll back, the entry is harmless: ledger_post() still finds the account missing."""
    known = _known_accounts(session)
    if len(known) > _ACCOUNT_ATTRIBUTES_LIMIT:
        known.clear()
    known.update(attributes)


def _tenants_and_currencies(session: Session, account_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Read before any lock is taken, and at most once per account and process."""
    known = _known_accounts(session)
    found: dict[str, tuple[str, str]] = {}
    missing = []
    for account_id in account_ids:
        attributes = known.get(account_id)
        if attributes is None:
            missing.append(account_id)
        else:
            found[account_id] = attributes
    if missing:
        if len(known) > _ACCOUNT_ATTRIBUTES_LIMIT:
            known.clear()
        for row in repository.account_attributes(session, missing):
            found[row.id] = known[row.id] = (str(row.tenant_id), str(row.currency))
    return found


def _held(outcome: repository.PostOutcome) -> dict[str, int]:
    return dict(zip(outcome.held_account_ids or (), outcome.held_balances or (), strict=True))


def _refusal(
    session: Session,
    tenant_id: str,
    drafts: list[_Draft],
    keys: list[str],
    expected: Mapping[str, int],
    outcome: repository.PostOutcome,
) -> list[JournalTransaction]:
    """What ledger_post() declined to write, as the error the SQLite path raises (or the replayed originals)."""
    account_id = str(outcome.refused_account_id)
    if outcome.status == "replay":
        replayed = _replay(session, tenant_id, drafts, keys)
        assert replayed is not None
        return replayed
    if outcome.status == "tenant_not_found":
        raise TenantNotFound(f"no tenant {tenant_id}", tenant_id=tenant_id)
    if outcome.status == "account_not_found":
        raise AccountNotFound(f"tenant {tenant_id} has no account {account_id}", account_id=account_id)
    if outcome.status == "balances_changed":
        held = _held(outcome)
        raise BalancesChanged({held_id: held[held_id] for held_id in expected})
    if outcome.status == "balance_out_of_range" and outcome.refused_balance is not None:
        check_new_balance(account_id, outcome.refused_balance)
    if (
        outcome.status == "insufficient_funds"
        and outcome.refused_balance is not None
        and outcome.refused_change is not None
    ):
        raise InsufficientFunds(account_id, outcome.refused_balance, outcome.refused_change)
    raise AssertionError(f"ledger_post() answered {outcome.status!r}")


def _post_sqlite(
    session: Session, tenant_id: str, drafts: list[_Draft], expected: dict[str, int], with_objects: bool
) -> _Posted:
    """SQLite's BEGIN IMMEDIATE already serializes writers: lock, check and write one after the other."""
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
            return _Posted([], replayed)

    locked = repository.lock_accounts(session, _account_ids(drafts) | expected.keys())
    accounts = {row.id: row for row in locked}
    balances = {account_id: int(row.balance) for account_id, row in accounts.items()}
    for account_id in expected:
        _check_in_tenant(tenant_id, account_id, accounts)
    if any(balances[account_id] != balance for account_id, balance in expected.items()):
        raise BalancesChanged({account_id: balances[account_id] for account_id in expected})
    for draft in drafts:
        _apply(draft, tenant_id, accounts, balances)

    currency_of = {account_id: str(row.currency) for account_id, row in accounts.items()}
    written: list[_Written] = []
    for draft in drafts:
        row, posting_rows, parts = _unchained_rows(tenant_id, draft, currency_of)
        last_seq, prev_hash = last_seq + 1, last_hash
        last_hash = hash_from_parts(parts, prev_hash, last_seq)
        row.update(seq=last_seq, prev_hash=prev_hash, hash=last_hash)
        # SQLite's chain trigger checks each transaction's predecessor is complete: one at a time.
        repository.insert_transaction(session, row, posting_rows)
        written.append(_Written(row, posting_rows, _orm_objects(row, posting_rows) if with_objects else None))
    repository.advance_head(session, tenant_id, last_seq, last_hash)
    _refresh_loaded_balances(session, balances)
    return _Posted(written)


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


def _check_in_tenant(tenant_id: str, account_id: str, accounts: Mapping[str, Any]) -> None:
    row = accounts.get(account_id)
    if row is None or row.tenant_id != tenant_id:
        raise AccountNotFound(f"tenant {tenant_id} has no account {account_id}", account_id=account_id)


def _apply(draft: _Draft, tenant_id: str, accounts: Mapping[str, Any], balances: dict[str, int]) -> None:
    for posting in draft.postings:
        _check_in_tenant(tenant_id, posting.account_id, accounts)
    check_postings(draft.postings, {account_id: row.currency for account_id, row in accounts.items()})
    for posting in draft.postings:
        row = accounts[posting.account_id]
        new_balance = balances[posting.account_id] + posting.amount
        check_new_balance(posting.account_id, new_balance)
        if new_balance < 0 and not AccountKind(row.kind).may_go_negative:
            raise InsufficientFunds(posting.account_id, balances[posting.account_id], posting.amount)
        balances[posting.account_id] = new_balance


def _unchained_rows(
    tenant_id: str, draft: _Draft, currency_of: Mapping[str, str]
) -> tuple[dict[str, Any], list[dict[str, Any]], tuple[bytes, bytes, bytes]]:
    """The transaction's row without its place in the chain (seq, prev_hash, hash), its posting rows,
    and the hashed bytes around that place (chain.hash_parts)."""
    transaction_id = new_id("txn")
    created_at = utc_now()
    legs = [
        (posting.account_id, posting.amount, currency_of[posting.account_id]) for posting in draft.postings
    ]
    parts = hash_parts(
        tenant_id=tenant_id,
        transaction_id=transaction_id,
        kind=draft.kind,
        reference=draft.reference,
        metadata=draft.metadata,
        created_at=format_timestamp(created_at),
        postings=legs,
    )
    row = {
        "id": transaction_id,
        "tenant_id": tenant_id,
        "kind": draft.kind,
        "reference": draft.reference,
        "metadata": draft.metadata,
        "idempotency_key": draft.idempotency_key,
        "request_hash": draft.request_hash,
        "posting_count": len(legs),
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
    return row, posting_rows, parts


def _orm_objects(
    row: dict[str, Any], posting_rows: list[dict[str, Any]]
) -> tuple[JournalTransaction, list[JournalPosting]]:
    values = {key: value for key, value in row.items() if key != "metadata"}
    return JournalTransaction(**values, metadata_=row["metadata"]), [
        JournalPosting(**posting) for posting in posting_rows
    ]


def _attach(session: Session, transaction: JournalTransaction, postings: list[JournalPosting]) -> None:
    """The ORM objects of rows written with Core, made persistent in the session without another query."""
    for instance in (transaction, *postings):
        make_transient_to_detached(instance)
        session.add(instance)
    set_committed_value(transaction, "postings", postings)


def _refresh_loaded_balances(session: Session, balances: Mapping[str, int]) -> None:
    """Accounts already loaded in the session see the balances the database trigger just wrote."""
    for account_id, balance in balances.items():
        account = session.identity_map.get(identity_key(Account, account_id))
        if account is not None:
            set_committed_value(account, "balance", balance)


def request_fingerprint(document: Mapping[str, Any]) -> str:
    """A convenient request_hash: SHA-256 of the request's canonical JSON."""
    from pokna.crypto.canonical_json import canonicalize

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
