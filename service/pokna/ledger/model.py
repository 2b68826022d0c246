"""The ledger's vocabulary and its pure rules: kinds, bounds, postings, and how postings are checked.

Sign convention: a posting is a signed amount in minor units. An account's balance is the sum of its
postings; the postings of one journal transaction sum to zero per currency. A deposit posts +amount to
the player's wallet and -amount to the tenant's external funding account, so external funding is
negative by design (it is the outside world's claim on the money inside), and wallets and pots never are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from pokna.api.fields import BEANCOUNT_KEYWORDS
from pokna.db.models.ledger import MAX_POSTING_AMOUNT
from pokna.ledger.errors import AmountOutOfRange, InvalidAccount, InvalidPostings, UnbalancedTransaction
from pokna_verify.crypto.canonical_json import canonicalize
from pokna_verify.crypto.errors import NotCanonicalizableError

DEFAULT_CURRENCY: Final = "CREDIT"
MAX_METADATA_BYTES: Final = 8192
MAX_POSTINGS: Final = 1000
_CURRENCY_RE = re.compile(r"[A-Z][A-Z0-9]{1,15}")


class AccountKind(StrEnum):
    PLAYER_WALLET = "player_wallet"
    GAME_POT = "game_pot"
    HOUSE = "house"
    EXTERNAL_FUNDING = "external_funding"
    REVENUE = "revenue"


class TransactionKind(StrEnum):
    DEPOSIT = "deposit"
    WITHDRAWAL = "withdrawal"
    ANTE = "ante"
    VIGO_CONTRIBUTION = "vigo_contribution"
    CHALLENGE_RAISE = "challenge_raise"
    CHALLENGE_MATCH = "challenge_match"
    PAYOUT = "payout"
    SPLIT = "split"
    RAKE = "rake"
    REFUND = "refund"
    REVERSAL = "reversal"
    ADJUSTMENT = "adjustment"


@dataclass(frozen=True, slots=True)
class Posting:
    """One leg of a journal transaction: `amount` (signed minor units) on `account_id`.

    The currency is always the account's: a requested leg may leave it out (None), a posted one carries
    it, and a request that names another currency is refused."""

    account_id: str
    amount: int
    currency: str | None = None


@dataclass(frozen=True, slots=True)
class AccountTransfer:
    """`amount` from `payer_account_id` to `payee_account_id`, posted as one two-leg journal transaction.

    The game's rules speak of a `Transfer` between seats and the pot (pokna_verify.game); the dealer maps each to
    an AccountTransfer between their accounts."""

    kind: TransactionKind | str
    payer_account_id: str
    payee_account_id: str
    amount: int

    def postings(self) -> tuple[Posting, Posting]:
        return Posting(self.payer_account_id, -self.amount), Posting(self.payee_account_id, self.amount)


@dataclass(frozen=True, slots=True)
class PostedTransaction:
    """A journal transaction as the ledger recorded it: what a deposit or withdrawal is answered from, and
    what get_transaction reads back. Plain values, not ORM objects: nothing
    about it changes after it is written, and a game that posts on every action needs nothing loaded."""

    id: str
    tenant_id: str
    seq: int
    kind: str
    reference: str | None
    metadata: dict[str, Any]
    postings: tuple[Posting, ...]
    prev_hash: str
    hash: str
    created_at: datetime
    chain: int = 0
    """Which of the tenant's hash chains it is on; `seq` counts per chain."""


def check_currency(currency: str) -> str:
    if not isinstance(currency, str) or _CURRENCY_RE.fullmatch(currency) is None:
        raise InvalidAccount(
            f"currency {currency!r} is not 2-16 upper-case letters or digits", field="currency"
        )
    if currency in BEANCOUNT_KEYWORDS:
        raise InvalidAccount(
            f"currency {currency!r} is a word Beancount reads as a value (TRUE, FALSE, NULL): the ledger's "
            "Beancount export could not name it",
            field="currency",
        )
    return currency


def check_amount(amount: object, what: str = "amount") -> int:
    if not isinstance(amount, int) or isinstance(amount, bool):
        raise InvalidPostings(f"{what} must be an integer number of minor units, not {amount!r}")
    if amount == 0:
        raise InvalidPostings(f"{what} must not be zero")
    if abs(amount) > MAX_POSTING_AMOUNT:
        raise AmountOutOfRange(
            f"{what} {amount} exceeds the bound of {MAX_POSTING_AMOUNT}", limit=MAX_POSTING_AMOUNT
        )
    return amount


def check_postings(postings: Sequence[Posting], currency_of: Mapping[str, str]) -> None:
    """Refuse anything but >= 2 non-zero, bounded legs on distinct accounts that balance per currency."""
    if len(postings) < 2:
        raise InvalidPostings(f"a journal transaction has at least two postings, not {len(postings)}")
    if len(postings) > MAX_POSTINGS:
        raise InvalidPostings(f"a journal transaction has at most {MAX_POSTINGS} postings")
    seen: set[str] = set()
    totals: dict[str, int] = {}
    for index, posting in enumerate(postings):
        check_amount(posting.amount, f"postings[{index}].amount")
        if posting.account_id in seen:
            raise InvalidPostings(f"account {posting.account_id} appears twice; net its postings first")
        seen.add(posting.account_id)
        currency = currency_of[posting.account_id]
        if posting.currency is not None and posting.currency != currency:
            raise InvalidPostings(
                f"postings[{index}] is in {posting.currency}; account {posting.account_id} holds {currency}"
            )
        totals[currency] = totals.get(currency, 0) + posting.amount
    unbalanced = {currency: total for currency, total in totals.items() if total != 0}
    if unbalanced:
        raise UnbalancedTransaction(
            "postings must sum to zero per currency; off by "
            + ", ".join(f"{total} {currency}" for currency, total in sorted(unbalanced.items())),
            totals=unbalanced,
        )


def check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Metadata is hashed into the chain, so it must have one canonical JSON form and survive a round trip.

    Floats are refused (money is integers, and a float's text can differ between JSON libraries).
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidPostings("metadata must be a JSON object")
    _refuse_floats(metadata, "metadata")
    try:
        encoded = canonicalize(metadata)
    except NotCanonicalizableError as error:
        raise InvalidPostings(f"metadata has no canonical JSON form: {error}") from error
    if len(encoded) > MAX_METADATA_BYTES:
        raise InvalidPostings(f"metadata is {len(encoded)} bytes; at most {MAX_METADATA_BYTES}")
    return dict(metadata)


def _refuse_floats(value: object, path: str) -> None:
    if isinstance(value, float):
        raise InvalidPostings(f"{path}: floats are not allowed in ledger metadata")
    if isinstance(value, str) and "\x00" in value:
        raise InvalidPostings(f"{path}: NUL characters are not allowed in ledger metadata")
    if isinstance(value, Mapping):
        for key, item in value.items():
            _refuse_floats(key, path)
            _refuse_floats(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _refuse_floats(item, f"{path}[{index}]")
