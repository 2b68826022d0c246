"""Money followed the dice: a game's postings in the ledger are exactly the transfers its replayed proof
makes, in order, between the accounts its seats and its pot name.

The match is generic. A proof's transfer names its parties as seat numbers or by name ("pot"); each
party is mapped to an account (a seat to its account in the signed game terms, a named party through
NAMED_PARTIES) and the transfer must be the next journal transaction of the game: same kind, the payer's
account debited and the payee's credited by the amount, nothing else. A new transfer kind needs nothing
here; a new named party needs its entry in NAMED_PARTIES.

The revenue party (a rake, docs/rules.md) is the tenant's revenue account in the game's currency. Its
account record may come later in the bundle than the game's (it sits before the first transaction that
touches it), so the expected transfer names it by `REVENUE_ACCOUNT`, and a posting matches it when its
account is of the revenue kind: the ledger keeps one per tenant, currency and chain (a rake goes to its game's
chain's), and the bundle is one tenant's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pokna_verify.fairness.proof import POT, TransferRecord

REVENUE_PARTY = "revenue"  # as a proof names it (pokna_verify.game.transfers.Revenue)
REVENUE_ACCOUNT = "<the tenant's revenue account>"


@dataclass(frozen=True, slots=True)
class ExpectedTransfer:
    kind: str
    payer_account_id: str
    payee_account_id: str
    amount: int

    def legs(self) -> list[tuple[str, int]]:
        return [(self.payer_account_id, -self.amount), (self.payee_account_id, self.amount)]

    def describe(self) -> str:
        return f"{self.kind} of {self.amount} from {self.payer_account_id} to {self.payee_account_id}"


@dataclass
class GameBook:
    """One game of the bundle, from its record to its last transfer in the range."""

    game_id: str
    line: int
    status: str
    pot_account_id: str
    expected: list[ExpectedTransfer] | None  # None: no proof yet (the game is in play)
    position: int  # transfers of the game seen so far, counting those before the range
    transfers_before: int = 0  # as its record says
    pot_balance: int = 0
    posted: int = 0

    @property
    def complete(self) -> bool:
        return self.expected is not None and self.position >= len(self.expected)


# How a named party of a proof's transfer maps to an account of the ledger.
NAMED_PARTIES: dict[str, Callable[[GameBook], str]] = {
    POT: lambda game: game.pot_account_id,
    REVENUE_PARTY: lambda _: REVENUE_ACCOUNT,
}


def expected_transfers(
    seat_accounts: Sequence[tuple[int, str]], proof_transfers: Sequence[TransferRecord], game: GameBook
) -> tuple[list[ExpectedTransfer], list[str]]:
    """The proof's transfers between accounts (its seats' accounts by seat number), and any party that
    maps to none."""
    seats = dict(seat_accounts)
    problems: list[str] = []

    def account(party: int | str, index: int) -> str:
        if isinstance(party, int):
            if party in seats:
                return seats[party]
            problems.append(f"transfer {index}: seat {party} is not in the game")
            return f"<seat {party}>"
        named = NAMED_PARTIES.get(party)
        if named is None:
            problems.append(f"transfer {index}: party {party!r} maps to no account")
            return f"<{party}>"
        return named(game)

    transfers = [
        ExpectedTransfer(
            transfer.kind, account(transfer.payer, i), account(transfer.payee, i), transfer.amount
        )
        for i, transfer in enumerate(proof_transfers)
    ]
    return transfers, problems


def pot_flow(transfers: Sequence[ExpectedTransfer], pot_account_id: str) -> int:
    return sum(
        transfer.amount if transfer.payee_account_id == pot_account_id else -transfer.amount
        for transfer in transfers
        if pot_account_id in (transfer.payer_account_id, transfer.payee_account_id)
    )


def take_transaction(
    game: GameBook, kind: str, postings: Sequence[Mapping[str, Any]], revenue_accounts: frozenset[str]
) -> str | None:
    """Match the game's next journal transaction; the problem when it is not the next transfer.
    `revenue_accounts`: those of the postings' accounts that are of the revenue kind."""
    game.posted += 1
    legs = [
        (
            REVENUE_ACCOUNT if posting["account_id"] in revenue_accounts else posting["account_id"],
            posting["amount"],
        )
        for posting in postings
    ]
    for account_id, amount in legs:
        if account_id == game.pot_account_id:
            game.pot_balance += amount
    if game.expected is None:
        return None
    index = game.position
    game.position += 1
    if index >= len(game.expected):
        return (
            f"game {game.game_id} has {len(game.expected)} transfers by its proof; this is a transaction "
            f"more ({kind})"
        )
    expected = game.expected[index]
    if kind != expected.kind or legs != expected.legs():
        shown = ", ".join(f"{account_id} {amount:+d}" for account_id, amount in legs)
        return (
            f"game {game.game_id} transfer {index}: the rules move {expected.describe()}; "
            f"the ledger posts {kind}: {shown}"
        )
    return None
