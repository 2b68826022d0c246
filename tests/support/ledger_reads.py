"""What tests read back from the ledger's tables to check a move: a balance, a tenant's system accounts, a
posted transaction. The service reads these on its own paths (the trial balance, the account routes, the
export); these are the tests' shortcuts, on the ORM session. The trial balance and the checkpoints are the
service's own statements and answers (pokna.ledger.reads), run on the test's session instead of beside an
API key's check."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from pokna.db.models.ledger import Account, JournalTransaction
from pokna.ledger import accounts, reads
from pokna.ledger.checkpoint import Checkpoint
from pokna.ledger.model import DEFAULT_CURRENCY, AccountKind, PostedTransaction, Posting
from pokna.ledger.reads import AccountRecord
from support.driver import system_account


def balance_of(session: Session, account_id: str) -> int:
    return int(session.execute(select(Account.balance).where(Account.id == account_id)).scalar_one())


def house_account(session: Session, tenant_id: str, currency: str = DEFAULT_CURRENCY) -> AccountRecord:
    """The tenant's house account in `currency`, created on demand as the other system accounts are."""
    return system_account(session, tenant_id, AccountKind.HOUSE, currency, 0)


def revenue_account(
    session: Session, tenant_id: str, currency: str = DEFAULT_CURRENCY, chain: int = 0
) -> AccountRecord:
    """The tenant's revenue account of `chain`, created on demand as a rake's first posting opens it
    (pokna.ledger.accounts_aio.open_system_account)."""
    return system_account(session, tenant_id, AccountKind.REVENUE, currency, chain)


def system_accounts(
    session: Session, tenant_id: str, kind: AccountKind | str, currency: str = DEFAULT_CURRENCY
) -> list[Account]:
    """The tenant's system accounts of `kind` in `currency`, one per chain that has used one (by chain)."""
    found = session.scalars(
        select(Account).where(
            Account.tenant_id == tenant_id,
            Account.kind == AccountKind(kind).value,
            Account.currency == currency,
        )
    )
    return sorted(found, key=lambda account: accounts.sub_account_chain(account.external_id, currency))


def system_balance(
    session: Session, tenant_id: str, kind: AccountKind | str, currency: str = DEFAULT_CURRENCY
) -> int:
    """The tenant's funding (or revenue, or house) balance in `currency`: the sum of its sub-accounts."""
    return sum(account.balance for account in system_accounts(session, tenant_id, kind, currency))


def get_transaction(
    session: Session, transaction_id: str, *, tenant_id: str | None = None
) -> PostedTransaction:
    statement = (
        select(JournalTransaction)
        .where(JournalTransaction.id == transaction_id)
        .options(selectinload(JournalTransaction.postings))
    )
    if tenant_id is not None:
        statement = statement.where(JournalTransaction.tenant_id == tenant_id)
    row = session.scalars(statement).one()
    return PostedTransaction(
        id=row.id,
        tenant_id=row.tenant_id,
        seq=row.seq,
        kind=row.kind,
        reference=row.reference,
        metadata=row.metadata_,
        postings=tuple(
            Posting(posting.account_id, posting.amount, posting.currency) for posting in row.postings
        ),
        prev_hash=row.prev_hash,
        hash=row.hash,
        created_at=row.created_at,
        chain=row.chain,
    )


def trial_balance(session: Session, tenant_id: str, currency: str = DEFAULT_CURRENCY) -> reads.TrialBalance:
    values = {"tenant_id": tenant_id, "currency": currency}
    rows = session.connection().exec_driver_sql(reads.TENANT_ACCOUNTS, values).all()
    return reads.trial_balance_of(tenant_id, currency, rows)


def list_checkpoints(session: Session, tenant_id: str, limit: int = 50) -> list[Checkpoint]:
    """Newest first."""
    values = {"tenant_id": tenant_id, "limit": limit}
    return reads.checkpoints_of(session.connection().exec_driver_sql(reads.CHECKPOINTS, values).all())
