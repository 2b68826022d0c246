"""Accounts on the async paths (psycopg): the driver statements behind accounts.py's `account_summaries`
and `open_account`, for a caller that pipelines them with its own work (pokna.dealer.creating: a new
game reads its seats' wallets and opens its pot in the round trips it already makes)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pokna.db.types import new_id
from pokna.ledger.accounts import AccountSummary
from pokna.ledger.model import AccountKind, check_currency

ACCOUNT_SUMMARIES = (
    "SELECT id, kind, currency, balance FROM account "
    "WHERE tenant_id = %(tenant_id)s AND id = ANY(%(account_ids)s)"
)
"""Id, kind, currency and balance of the tenant's accounts among `account_ids`, read without a lock."""

OPEN_ACCOUNT = (
    "INSERT INTO account (id, tenant_id, kind, currency, external_id, balance, created_at) "
    "VALUES (%(id)s, %(tenant_id)s, %(kind)s, %(currency)s, %(external_id)s, 0, %(created_at)s)"
)
"""A new account with balance 0, whose id and external id nobody has used: it fails (and with it the
caller's transaction) where accounts.open_account would have answered AccountExists."""


def summaries(rows: Iterable[tuple[str, str, str, int]]) -> dict[str, AccountSummary]:
    """ACCOUNT_SUMMARIES's rows, by id, as account_summaries answers them."""
    return {
        account_id: AccountSummary(account_id, kind, currency, int(balance))
        for account_id, kind, currency, balance in rows
    }


def new_account(
    tenant_id: str, kind: AccountKind, currency: str, external_id: str, now: datetime
) -> dict[str, Any]:
    """OPEN_ACCOUNT's values for a new account (its id drawn here)."""
    return {
        "id": new_id("acct"),
        "tenant_id": tenant_id,
        "kind": kind.value,
        "currency": check_currency(currency),
        "external_id": external_id,
        "created_at": now,
    }
