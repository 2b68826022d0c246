"""The public fairness link's addresses and the shape of its token: what a player may hold of a game.

The service serves the link (pokna.dealer.fairness_link) and draws its tokens (pokna.dealer.creating); the
verifier reads every form a player is handed (pokna_verify.cli.proof_source). Both read the same
addresses here. Paths are relative to the API's base URL, which only the deployment knows.
"""

from __future__ import annotations

KEYS_PATH = "/v1/fairness/keys"
# What secrets.token_urlsafe makes. Anything else cannot be a link, and is told apart from an unknown
# token by nothing: both are the same 404.
_TOKEN_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def link_path(token: str) -> str:
    """The link's JSON document, relative to the API's base URL."""
    return f"/v1/fairness/proofs/{token}"


def verify_page_path(token: str) -> str:
    """The browser verifier opened on the link, relative to the API's base URL."""
    return f"/verify?proof={token}"


def is_token_shaped(token: str) -> bool:
    return 16 <= len(token) <= 64 and set(token) <= _TOKEN_ALPHABET
