"""The tenant's system accounts' ids, remembered per engine once a committed transaction has found them.

A system account is never deleted and its external id never changes (the trg_account_guard trigger refuses
it), so an entry can be missing but never wrong.
"""

from __future__ import annotations

import weakref
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

_LIMIT = 100_000


# Engine -> (tenant_id, kind, external id) -> the system account's id (a tenant's funding sub-account of a
# chain is found on every deposit and withdrawal; accounts.system_external_id). An id is remembered only once the transaction that found it has
# committed (so the account is committed too), and a system account is never deleted: never wrong.
_SYSTEM_IDS: weakref.WeakKeyDictionary[Any, dict[tuple[str, str, str], str]] = weakref.WeakKeyDictionary()
_FOUND_KEY = "pokna.ledger.system_accounts_found"


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


@event.listens_for(Session, "after_commit")
def _remember_on_commit(session: Session) -> None:
    found = session.info.pop(_FOUND_KEY, None)
    if found:
        _system_ids(session).update(found)


@event.listens_for(Session, "after_transaction_end")
def _forget_at_the_end(session: Session, transaction: Any) -> None:
    """A session closed with its transaction open ends it without `after_soft_rollback`: whatever was not
    remembered at a commit (which runs before this) is forgotten with the outermost transaction."""
    if transaction.parent is None:
        session.info.pop(_FOUND_KEY, None)


@event.listens_for(Session, "after_soft_rollback")
def _forget_on_rollback(session: Session, _previous_transaction: Any) -> None:
    """Any rollback, a savepoint's too: what was found in it may be gone."""
    session.info.pop(_FOUND_KEY, None)
