"""The problems the ledger's operations can answer, built from the errors that raise them
(pokna.api.problem_docs has the mechanism and the kernel's own)."""

from __future__ import annotations

from pokna.api.problem_docs import of
from pokna.errors import InvalidRequest, WalletHeld
from pokna.ledger.errors import AccountExists, AccountNotFound, InsufficientFunds

ACCOUNT_NOT_FOUND = of(AccountNotFound, "no account acct_0c1d2e3f")
ACCOUNT_EXISTS = of(AccountExists, "tenant ten_0c1d already has a player_wallet account for 'user-42'")
INSUFFICIENT_FUNDS = of(
    InsufficientFunds, "account acct_0c1d holds 5; a change of -10 would take it below zero"
)
NOT_A_WALLET = of(InvalidRequest, "deposits go to player wallets, not a house")
WALLET_HELD = of(WalletHeld, "wallet acct_0c1d is held by game game_9a8b until its accepted roll is resolved")
SEQ_WITHOUT_CHAIN = of(
    InvalidRequest,
    "from_seq and to_seq are positions on one chain: give chain too (chain=0 is what a seq meant ...)",
)
