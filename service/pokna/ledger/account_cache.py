"""Each account's tenant and currency, remembered per engine, so that posting on PostgreSQL can check
them and encode the hashed bytes before it takes any lock, without a query for accounts it has seen.

Neither ever changes (the trg_account_guard trigger refuses it) and account ids are random and never
reused, so an entry can be missing but never wrong. It need not be right for an account that no longer
exists (an opening rolled back): ledger_post() checks under the lock that each account exists in the
tenant, and the posting trigger that its currency is the posting's.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from pokna.ledger import repository

# Engine -> account id -> (tenant_id, currency). Cleared whole when it grows past the limit: a process
# serving many tenants re-reads what it needs, and memory stays bounded.
_ATTRIBUTES: weakref.WeakKeyDictionary[Any, dict[str, tuple[str, str]]] = weakref.WeakKeyDictionary()
_LIMIT = 100_000


def _known(session: Session) -> dict[str, tuple[str, str]]:
    bind = session.get_bind()
    known = _ATTRIBUTES.setdefault(getattr(bind, "engine", bind), {})
    if len(known) > _LIMIT:
        known.clear()
    return known


def remember(session: Session, account_id: str, tenant_id: str, currency: str) -> None:
    """An account opened here is known at once: a game's pot is posted to in the game's first action."""
    _known(session)[account_id] = (tenant_id, currency)


def tenants_and_currencies(session: Session, account_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """The (tenant_id, currency) of each existing account among `account_ids`, read without a lock, at
    most once per account and engine."""
    known = _known(session)
    found: dict[str, tuple[str, str]] = {}
    missing = []
    for account_id in account_ids:
        attributes = known.get(account_id)
        if attributes is None:
            missing.append(account_id)
        else:
            found[account_id] = attributes
    if missing:
        for row in repository.account_attributes(session, missing):
            found[row.id] = known[row.id] = (str(row.tenant_id), str(row.currency))
    return found
