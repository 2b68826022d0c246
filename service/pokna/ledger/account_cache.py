"""Each account's tenant and currency, remembered per engine, so that posting on PostgreSQL can check
them and encode the hashed bytes before it takes any lock, without a query for accounts it has seen.

Neither ever changes (the trg_account_guard trigger refuses it) and account ids are random and never
reused, so an entry can be missing but never wrong. It need not be right for an account that no longer
exists (an opening rolled back): ledger_post() checks under the lock that each account exists in the
tenant, and the posting trigger that its currency is the posting's.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import event
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


def tenants_and_currencies(
    session: Session, tenant_id: str, account_ids: Sequence[str]
) -> dict[str, tuple[str, str]]:
    """The (tenant_id, currency) of each account among `account_ids` known here, or found among the
    tenant's: read without a lock, at most once per account and engine. Another tenant's account is
    absent, unless it was seen before (and then its own tenant says whose it is)."""
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
        for row in repository.account_attributes(session, tenant_id, missing):
            found[row.id] = known[row.id] = (str(row.tenant_id), str(row.currency))
    return found


# --- system accounts and balances held under lock ----------------------------------------------------------

# Engine -> (tenant_id, kind, external id) -> the system account's id (a tenant's funding sub-account of a
# chain is found on every deposit and withdrawal; accounts.system_external_id). An id is remembered only once the transaction that found it has
# committed (so the account is committed too), and a system account is never deleted: never wrong.
_SYSTEM_IDS: weakref.WeakKeyDictionary[Any, dict[tuple[str, str, str], str]] = weakref.WeakKeyDictionary()
_FOUND_KEY = "pokna.ledger.system_accounts_found"
_HELD_KEY = "pokna.ledger.balances_held"


def _system_ids(session: Session) -> dict[tuple[str, str, str], str]:
    bind = session.get_bind()
    known = _SYSTEM_IDS.setdefault(getattr(bind, "engine", bind), {})
    if len(known) > _LIMIT:
        known.clear()
    return known


def system_account_id(session: Session, tenant_id: str, kind: str, external_id: str) -> str | None:
    return _system_ids(session).get((tenant_id, kind, external_id))


def found_system_account(
    session: Session, tenant_id: str, kind: str, external_id: str, account_id: str
) -> None:
    """Remembered when this session's transaction commits (`_remember_on_commit`)."""
    session.info.setdefault(_FOUND_KEY, {})[(tenant_id, kind, external_id)] = account_id


def hold_balances(session: Session, balances: Mapping[str, int]) -> None:
    """Balances a posting left on accounts this transaction now holds locked (the ledger's row locks):
    nothing else can change them before it ends, so they are the
    accounts' balances until then (`held_balance`), and forgotten when it commits or rolls back."""
    session.info.setdefault(_HELD_KEY, {}).update(balances)


def held_balance(session: Session, account_id: str) -> int | None:
    held: dict[str, int] | None = session.info.get(_HELD_KEY)
    return None if held is None else held.get(account_id)


@event.listens_for(Session, "after_commit")
def _remember_on_commit(session: Session) -> None:
    found = session.info.pop(_FOUND_KEY, None)
    if found:
        _system_ids(session).update(found)
    session.info.pop(_HELD_KEY, None)


@event.listens_for(Session, "after_transaction_end")
def _forget_at_the_end(session: Session, transaction: Any) -> None:
    """A session closed with its transaction open ends it without `after_soft_rollback`: whatever was not
    remembered at a commit (which runs before this) is forgotten with the outermost transaction."""
    if transaction.parent is None:
        session.info.pop(_FOUND_KEY, None)
        session.info.pop(_HELD_KEY, None)


@event.listens_for(Session, "after_soft_rollback")
def _forget_on_rollback(session: Session, _previous_transaction: Any) -> None:
    """Any rollback, a savepoint's too: what was found or posted in it may be gone."""
    session.info.pop(_FOUND_KEY, None)
    session.info.pop(_HELD_KEY, None)
