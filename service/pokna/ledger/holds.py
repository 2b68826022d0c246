"""Reading balances that will not change before the caller posts: what the game needs to decide who can pay."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from pokna.ledger import repository
from pokna.ledger.errors import AccountNotFound, TenantNotFound


def lock_balances(session: Session, *, tenant_id: str, account_ids: Sequence[str]) -> dict[str, int]:
    """Lock the tenant's chain head, then the accounts in id order (the ledger's one lock order, so this
    never deadlocks with a posting), and return their balances. The locks last until the caller commits,
    so a balance read here is still true when the caller's transfers are posted."""
    if repository.lock_head(session, tenant_id) is None:
        if not repository.tenant_exists(session, tenant_id):
            raise TenantNotFound(f"no tenant {tenant_id}", tenant_id=tenant_id)
        repository.create_head(session, tenant_id)
        repository.lock_head(session, tenant_id)
    rows = {row.id: row for row in repository.lock_accounts(session, account_ids)}
    for account_id in account_ids:
        row = rows.get(account_id)
        if row is None or row.tenant_id != tenant_id:
            raise AccountNotFound(f"no account {account_id}", account_id=account_id)
    return {account_id: int(row.balance) for account_id, row in rows.items()}


def read_balances(session: Session, *, tenant_id: str, account_ids: Sequence[str]) -> dict[str, int]:
    """The same answer as lock_balances without the locks: for deciding whether a lock is needed at all."""
    rows = {row.id: row for row in repository.account_rows(session, account_ids)}
    for account_id in account_ids:
        row = rows.get(account_id)
        if row is None or row.tenant_id != tenant_id:
            raise AccountNotFound(f"no account {account_id}", account_id=account_id)
    return {account_id: int(row.balance) for account_id, row in rows.items()}
