"""Reading the journal: an account's history, one transaction, a tenant's trial balance. No locks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from pokna.ledger import repository
from pokna.ledger.accounts import PER_CHAIN_KINDS, get_account, sub_account_chain
from pokna.ledger.errors import InvalidPostings, TransactionNotFound
from pokna.ledger.model import DEFAULT_CURRENCY
from pokna.paging import Page, page_of

MAX_PAGE = 500


@dataclass(frozen=True)
class AccountEntry:
    """One posting on an account, with its transaction's identity."""

    transaction_id: str
    seq: int
    chain: int
    kind: str
    reference: str | None
    created_at: datetime
    amount: int
    currency: str


def transactions_of(
    session: Session,
    account_id: str,
    *,
    tenant_id: str | None = None,
    limit: int = 50,
    starting_after: str | None = None,
) -> Page[AccountEntry]:
    """The account's postings, newest first; `starting_after` is the last transaction id of the previous
    page (TransactionNotFound if it is not a transaction of this account). With `tenant_id`, another
    tenant's account is not found."""
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidPostings(f"limit must be between 1 and {MAX_PAGE}")
    if tenant_id is None:
        tenant_id = get_account(session, account_id).tenant_id
    else:
        get_account(session, account_id, tenant_id=tenant_id)
    before = None
    if starting_after is not None:
        before = repository.transaction_position(session, tenant_id, starting_after, account_id)
        if before is None:
            raise TransactionNotFound(
                f"no journal transaction {starting_after}", transaction_id=starting_after
            )
    rows = repository.account_entries(session, tenant_id, account_id, before=before, limit=limit + 1)
    entries = [
        AccountEntry(
            transaction_id=row.id,
            seq=int(row.seq),
            chain=int(row.chain),
            kind=row.kind,
            reference=row.reference,
            created_at=row.created_at,
            amount=int(row.amount),
            currency=row.currency,
        )
        for row in rows
    ]
    return page_of(entries, limit, lambda entry: entry.transaction_id)


@dataclass(frozen=True)
class AccountBalance:
    account_id: str
    kind: str
    external_id: str | None
    balance: int


@dataclass(frozen=True)
class ChartLine:
    """One account of the tenant's chart as it knows it: an ordinary account, or one kept in per-chain
    parts (`parts`, by chain), whose balance is theirs together."""

    account_id: str
    kind: str
    external_id: str | None
    balance: int
    parts: tuple[tuple[int, AccountBalance], ...] = ()


@dataclass(frozen=True)
class TrialBalance:
    """Every account of one tenant and currency; `total` is zero whenever the books are sound."""

    tenant_id: str
    currency: str
    accounts: list[AccountBalance]

    @property
    def total(self) -> int:
        return sum(account.balance for account in self.accounts)

    def chart(self) -> list[ChartLine]:
        """The accounts as the tenant knows them: the funding and revenue accounts, which the ledger keeps
        one per chain so that chains never wait for each other (docs/ledger.md, "Chains"), each as one
        account with its chains' parts as sub-accounts (issue 37, item 8: a tenant with two deposits saw
        `CREDIT/chain2`, `CREDIT/chain6`, ... as accounts of its own). The account's id is its first part's
        (chain 0's, the one of before chains, when it has one). In the order of the accounts' ids."""
        lines: list[ChartLine] = []
        grouped: dict[str, list[tuple[int, AccountBalance]]] = {}
        for account in self.accounts:
            if account.kind in PER_CHAIN_KINDS:
                chain = sub_account_chain(account.external_id, self.currency)
                if chain >= 0:
                    grouped.setdefault(account.kind, []).append((chain, account))
                    continue
            lines.append(ChartLine(account.account_id, account.kind, account.external_id, account.balance))
        for kind, parts in grouped.items():
            parts.sort(key=lambda part: part[0])
            first = parts[0][1]
            balance = sum(account.balance for _, account in parts)
            lines.append(ChartLine(first.account_id, kind, self.currency, balance, tuple(parts)))
        return sorted(lines, key=lambda line: line.account_id)


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
