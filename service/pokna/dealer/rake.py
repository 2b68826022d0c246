"""Rake terms as the dealer takes them: named by the request, or else the tenant's defaults.

The rules (pokna_verify.game) compute each rake from the terms in the game's config; the dealer fixes those terms
when the game is created (a table's when the table is), signs them in the commitment receipt, and posts
every rake from the pot to the tenant's revenue sub-account of the game's chain, opened on the first rake in
each currency and chain.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from pokna.dealer.schemas import RakeOut
from pokna.errors import InvalidRequest
from pokna.tenants.settings import rake_defaults
from pokna_verify.game import GameConfig, GameError


@dataclass(frozen=True)
class RakeTerms:
    """`bps` basis points of each pot paid out, rounded down, at most `cap` minor units (None: no cap)."""

    bps: int = 0
    cap: int | None = None

    def out(self) -> RakeOut:
        return RakeOut(bps=self.bps, cap=self.cap)


NO_RAKE = RakeTerms()


def rake_terms_for(session: Session, tenant_id: str, asked: RakeTerms | None) -> RakeTerms:
    """The terms a request named, or the tenant's defaults when it named none."""
    if asked is not None:
        return asked
    bps, cap = rake_defaults(session, tenant_id)
    return RakeTerms(bps, cap)


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
