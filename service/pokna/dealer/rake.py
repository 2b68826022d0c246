"""Rake terms as the dealer takes them: named by the request, or else the tenant's defaults.

The rules (pokna_verify.game) compute each rake from the terms in the game's config; the dealer fixes those terms
when the game is created (a table's when the table is), signs them in the commitment receipt, and posts
every rake from the pot to the tenant's revenue sub-account of the game's chain, opened on the first rake in
each currency and chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from pokna.errors import InvalidRequest
from pokna.idempotency.keyed import Transaction
from pokna.tenants.settings import GAME_DEFAULTS, SET_DEFAULTS, TenantSettingsOut, settings_out
from pokna_verify.game import GameConfig, GameError
from pokna_verify.invariant import present


@dataclass(frozen=True)
class RakeTerms:
    """`bps` basis points of each pot paid out, rounded down, at most `cap` minor units (None: no cap)."""

    bps: int = 0
    cap: int | None = None


def game_config(stake: int, challenge_raise: int | None, player_count: int, rake: RakeTerms) -> GameConfig:
    """The rules' config, its refusals named by the request field they come from."""
    try:
        return GameConfig.create(
            stake=stake,
            challenge_raise=challenge_raise,
            player_count=player_count,
            rake_bps=rake.bps,
            rake_cap=rake.cap,
        )
    except GameError as error:
        field = str(error.details.get("field", ""))
        field = {"rake_bps": "rake.bps", "rake_cap": "rake.cap"}.get(field, field)
        raise InvalidRequest(error.message, field=f"body.{field}" if field else "body") from error


async def tenant_defaults(found: psycopg.AsyncCursor[Any]) -> tuple[RakeTerms, str]:
    """GAME_DEFAULTS' row, as sent in the caller's pipeline: the tenant's default rake terms and mode."""
    bps, cap, mode = present(await found.fetchone(), "the tenant's row (a key's tenant is never deleted)")
    return RakeTerms(bps, cap), mode


async def set_defaults(opened: Transaction, terms: RakeTerms, fairness_mode: str | None) -> TenantSettingsOut:
    """The tenant's defaults for new games and tables: `terms`, and `fairness_mode` unless None (then the
    one it has, read in the transaction's first round trip); its settings as they now are."""
    connection = opened.connection
    found = await opened.read(lambda tenant_id: connection.execute(GAME_DEFAULTS, {"tenant_id": tenant_id}))
    _, mode = await tenant_defaults(found)
    mode = mode if fairness_mode is None else fairness_mode
    values = {"tenant_id": opened.tenant, "bps": terms.bps, "cap": terms.cap, "fairness_mode": mode}
    await connection.execute(SET_DEFAULTS, values)
    return settings_out(opened.tenant, terms.bps, terms.cap, mode)
