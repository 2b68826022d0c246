"""The ledger's locks taken before deciding, for a game request that lost a race.

A game step is decided on wallet balances read without the ledger's locks, and posted with them as
expected balances: the short way, right almost always. When a wallet moved in between, nothing is written
and the request is decided again; this time on balances read under the ledger's own locks, in its one lock
order (the head of the game's chain, then the accounts by ascending id: see repository.lock_accounts), so
nothing can move them before the posting and the second decision is the last. Without this, games that
share wallets with busy neighbours could lose the race every time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from psycopg import AsyncConnection
from sqlalchemy.orm import Session

from pokna.ledger import repository

_HOLD_HEAD = (
    "SELECT last_seq FROM ledger_head WHERE tenant_id = %(tenant_id)s AND chain = %(chain)s FOR UPDATE"
)
_HOLD_WALLETS = (
    "SELECT id, balance FROM account WHERE id = ANY(%(account_ids)s) AND tenant_id = %(tenant_id)s "
    "ORDER BY id FOR NO KEY UPDATE"
)


async def hold_wallets(
    connection: AsyncConnection[Any], tenant_id: str, chain: int, account_ids: Iterable[str]
) -> dict[str, int]:
    """Lock the head of the tenant's `chain` (the one the game posts on) and the accounts until the
    transaction ends; their balances."""
    params = {"tenant_id": tenant_id, "chain": chain, "account_ids": sorted(set(account_ids))}
    async with connection.pipeline():
        await connection.execute(_HOLD_HEAD, params)
        rows = await (await connection.execute(_HOLD_WALLETS, params)).fetchall()
    return {account_id: int(balance) for account_id, balance in rows}


def hold_wallets_now(
    session: Session, tenant_id: str, chain: int, account_ids: Iterable[str]
) -> dict[str, int]:
    """`hold_wallets` on the session's connection."""
    repository.lock_head(session, tenant_id, chain)
    return {row.id: int(row.balance) for row in repository.lock_accounts(session, tenant_id, account_ids)}
