"""The ledger's locks taken before deciding, for a game request that lost a race.

A game step is decided on wallet balances read without the ledger's locks, and posted with them as
expected balances: the short way, right almost always. When a wallet moved in between, nothing is written
and the request is decided again; this time on balances read under the ledger's own locks, in its one lock
order (the head of the game's chain, then the accounts by ascending id, as ledger_post() takes them), so
nothing can move them before the posting and the second decision is the last. Without this, games that
share wallets with busy neighbours could lose the race every time.

Every account the step may post to is locked here, in one statement, in ascending id order: the wallets,
the game's pot and the tenant's revenue sub-account of the game's chain (a rake). Locking only the wallets
and leaving the others to the posting would take the revenue account after wallets of a higher id, out of
the one order: a posting on another chain may hold the revenue account and wait for one of these wallets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection

from pokna.ledger.accounts import system_external_id

# The head is created as ledger_post() creates it on a chain's first posting, so that there is a row to lock:
# else the accounts would be locked first, and the posting would then wait for the head's creation by another.
_CREATE_HEAD = (
    "INSERT INTO ledger_head (tenant_id, chain, last_seq, last_hash) "
    "VALUES (%(tenant_id)s, %(chain)s, 0, repeat('0', 64)) ON CONFLICT DO NOTHING"
)
_HOLD_HEAD = (
    "SELECT last_seq FROM ledger_head WHERE tenant_id = %(tenant_id)s AND chain = %(chain)s FOR UPDATE"
)
# FOR NO KEY UPDATE, not FOR UPDATE (as ledger_post() locks them): a balance change never touches the key,
# and the weaker lock does not conflict with the FOR KEY SHARE that PostgreSQL takes when another
# transaction inserts a row referencing the account (a game seat, a pot), in whatever order it inserts them.
_HOLD_ACCOUNTS = (
    "SELECT id, balance FROM account WHERE tenant_id = %(tenant_id)s "
    "AND (id = ANY(%(account_ids)s) OR (kind = 'revenue' AND external_id = %(revenue)s)) "
    "ORDER BY id FOR NO KEY UPDATE"
)


@dataclass(frozen=True)
class GameAccounts:
    """What a game step may post to: the game's chain and pot, the seats' wallets, and (for a rake) the
    tenant's revenue sub-account of the game's currency and chain."""

    chain: int
    currency: str
    pot_account_id: str
    wallet_ids: Iterable[str]

    def params(self, tenant_id: str) -> dict[str, Any]:
        return {
            "tenant_id": tenant_id,
            "chain": self.chain,
            "revenue": system_external_id(self.currency, self.chain),
            "account_ids": sorted({self.pot_account_id, *self.wallet_ids}),
        }


async def hold_wallets(
    connection: AsyncConnection[Any], tenant_id: str, game: GameAccounts
) -> dict[str, int]:
    """Lock the head of the game's chain, then every account the step may post to, until the transaction
    ends; the wallets' balances."""
    params = game.params(tenant_id)
    async with connection.pipeline():
        await connection.execute(_CREATE_HEAD, params)
        await connection.execute(_HOLD_HEAD, params)
        rows = await (await connection.execute(_HOLD_ACCOUNTS, params)).fetchall()
    wallets = set(game.wallet_ids)
    return {account_id: int(balance) for account_id, balance in rows if account_id in wallets}
