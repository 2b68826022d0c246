"""What the store answers when it does not post: a typed error with stable words, or, for a retry, the
transactions it retries.

ledger_post() answers a status naming the reason, which the store raises through these.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from pokna.ledger import repository
from pokna.ledger.drafts import Draft
from pokna.ledger.errors import AccountNotFound, IdempotencyKeyReused, TenantNotFound
from pokna.ledger.model import PostedTransaction


def tenant_not_found(tenant_id: str) -> TenantNotFound:
    return TenantNotFound(f"no tenant {tenant_id}", tenant_id=tenant_id)


def account_not_in_tenant(tenant_id: str, account_id: str) -> AccountNotFound:
    """Also the answer for another tenant's account: which tenants exist is nobody else's business."""
    return AccountNotFound(f"tenant {tenant_id} has no account {account_id}", account_id=account_id)


def replayed(session: Session, tenant_id: str, drafts: Sequence[Draft]) -> list[PostedTransaction] | None:
    """The originals if every key was used by this same request; None if none was; else refuse.

    Read under the head lock: a retry waiting for the first request finds what it committed."""
    keys = [draft.idempotency_key for draft in drafts if draft.idempotency_key is not None]
    if not keys:
        return None
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
