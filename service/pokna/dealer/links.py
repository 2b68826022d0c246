"""The public fairness link's token, drawn when a game is created (pokna.dealer.fairness_link serves what
it opens). The link's addresses and the token's shape are the verifier's as much as the service's, so they
live in `pokna_verify.fairness.links` and are named here for the dealer.

The token is random (secrets.token_urlsafe: 192 bits), never derived from the game id.
"""

from __future__ import annotations

import secrets

from pokna_verify.fairness.links import KEYS_PATH, is_token_shaped, link_path, verify_page_path

__all__ = ["KEYS_PATH", "TOKEN_BYTES", "is_token_shaped", "link_path", "new_public_token", "verify_page_path"]

TOKEN_BYTES = 24


def new_public_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)
