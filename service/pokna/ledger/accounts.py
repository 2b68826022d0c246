"""Accounts: what a system account's external id says (its currency and chain), and what other domains
may know of an account (`AccountSummary`). Opening and reading accounts is async, on the driver
(accounts_aio.py, pokna.ledger.reads)."""

from __future__ import annotations

from dataclasses import dataclass

from pokna.ledger.model import AccountKind, check_currency
from pokna_verify.ledger.chain import LEDGER_CHAINS


def system_external_id(currency: str, chain: int = 0) -> str:
    """A system account's external id: its currency on chain 0 (as before chains), `CREDIT/chain3` on chain
    3. A currency is upper-case letters and digits, so no sub-account's id is another's, or a currency."""
    check_currency(currency)
    if type(chain) is not int or not 0 <= chain < LEDGER_CHAINS:
        raise ValueError(f"chain is one of 0 to {LEDGER_CHAINS - 1}, not {chain!r}")
    return currency if chain == 0 else f"{currency}/chain{chain}"


PER_CHAIN_KINDS = frozenset({AccountKind.EXTERNAL_FUNDING.value, AccountKind.REVENUE.value})
"""The system accounts kept one per chain (the funding account, and the revenue account a game's rake is
posted to, chain_for(game id)'s); the house's is one."""


def sub_account_chain(external_id: str | None, currency: str) -> int:
    """The chain of a per-chain system account's part, from its external id (`system_external_id`);
    -1 when the id is not one of a part's."""
    if external_id == currency or external_id is None:
        return 0
    _, _, chain = external_id.partition("/chain")
    return int(chain) if chain.isdigit() else -1


@dataclass(frozen=True)
class AccountSummary:
    """What another domain may know of an account: what it is and what it holds (read without a lock)."""

    id: str
    kind: str
    currency: str
    balance: int
