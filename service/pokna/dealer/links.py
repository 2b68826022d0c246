"""The public fairness link's addresses and its token (pokna.dealer.fairness_link serves what it opens).

The token is random (secrets.token_urlsafe: 192 bits), never derived from the game id. Paths are relative
to the API's base URL, which only the deployment knows.
"""

from __future__ import annotations

import secrets

TOKEN_BYTES = 24
KEYS_PATH = "/v1/fairness/keys"
# What secrets.token_urlsafe makes. Anything else cannot be a link, and is told apart from an unknown
# token by nothing: both are the same 404.
_TOKEN_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def new_public_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def link_path(token: str) -> str:
    """The link's JSON document, relative to the API's base URL."""
    return f"/v1/fairness/proofs/{token}"


def verify_page_path(token: str) -> str:
    """The browser verifier opened on the link, relative to the API's base URL."""
    return f"/verify?proof={token}"


def is_token_shaped(token: str) -> bool:
    return 16 <= len(token) <= 64 and set(token) <= _TOKEN_ALPHABET
