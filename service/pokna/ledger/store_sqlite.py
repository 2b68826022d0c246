"""The ledger on SQLite: posting one statement after another, and the portable JSONL export.

SQLite takes its write lock at BEGIN IMMEDIATE (pokna.db.engine), so a writer already holds the whole
database when it gets here: the head and account "locks" below are plain reads there, and the order of
the steps matters only for which refusal a request gets. The same statements would lock rows on
PostgreSQL, in the order every writer uses (the head, then accounts by ascending id), but PostgreSQL has
its one-round-trip store.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from pokna.ledger import repository
from pokna.ledger.books_repository import SeqRange
from pokna.ledger.chain import hash_from_parts
from pokna.ledger.drafts import Draft, account_ids, posted, unchained
from pokna.ledger.errors import BalancesChanged, InsufficientFunds
from pokna.ledger.export import portable_jsonl
from pokna.ledger.model import AccountKind, PostedTransaction, check_new_balance, check_postings
from pokna.ledger.refusals import account_not_in_tenant, replayed, tenant_not_found
from pokna.ledger.store import LedgerStore, Posted


class SqliteLedgerStore(LedgerStore):
    def post(
        self,
        session: Session,
        tenant_id: str,
        drafts: Sequence[Draft],
        expected_balances: Mapping[str, int],
    ) -> Posted:
        """Lock, check and write one after the other; every check passes before the first write."""
        head = repository.lock_head(session, tenant_id)
        if head is None:
            if not repository.tenant_exists(session, tenant_id):
                raise tenant_not_found(tenant_id)
            repository.create_head(session, tenant_id)
            head = repository.lock_head(session, tenant_id)
        assert head is not None
        last_seq, last_hash = head

        originals = replayed(session, tenant_id, drafts)
        if originals is not None:
            return Posted(originals, {})

        locked = repository.lock_accounts(session, account_ids(drafts) | expected_balances.keys())
        accounts = {row.id: row for row in locked}
        balances = {account_id: int(row.balance) for account_id, row in accounts.items()}
        for account_id in expected_balances:
            _check_in_tenant(tenant_id, account_id, accounts)
        if any(balances[account_id] != balance for account_id, balance in expected_balances.items()):
            raise BalancesChanged({account_id: balances[account_id] for account_id in expected_balances})
        for draft in drafts:
            _apply_postings(draft, tenant_id, accounts, balances)

        currency_of = {account_id: str(row.currency) for account_id, row in accounts.items()}
        transactions: list[PostedTransaction] = []
        for draft in drafts:
            written = unchained(tenant_id, draft, currency_of)
            seq, prev_hash = last_seq + 1, last_hash
            last_seq, last_hash = seq, hash_from_parts(written.parts, prev_hash, seq)
            # SQLite's chain trigger checks each transaction's predecessor is complete: one at a time.
            repository.insert_transaction(
                session,
                {**written.row, "seq": seq, "prev_hash": prev_hash, "hash": last_hash},
                written.postings,
            )
            transactions.append(posted(written, seq, prev_hash, last_hash))
        repository.advance_head(session, tenant_id, last_seq, last_hash)
        return Posted(transactions, balances)

    def jsonl_lines(self, session: Session, tenant_id: str, seqs: SeqRange) -> Iterator[str]:
        return portable_jsonl(session, tenant_id, seqs)


def _check_in_tenant(tenant_id: str, account_id: str, accounts: Mapping[str, Any]) -> None:
    row = accounts.get(account_id)
    if row is None or row.tenant_id != tenant_id:
        raise account_not_in_tenant(tenant_id, account_id)


def _apply_postings(
    draft: Draft, tenant_id: str, accounts: Mapping[str, Any], balances: dict[str, int]
) -> None:
    """Apply one transaction to the running `balances`, refusing anything ledger_post() would refuse."""
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
