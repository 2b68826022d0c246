"""Money moves as data. The engine never touches a balance; the ledger posts these."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Final, TypeAlias

from pokna_verify.game.json_value import JSONObject
from pokna_verify.invariant import of_type


class Pot(Enum):
    """The game's pot as a party, distinct from every seat number so it cannot be confused with seat 0."""

    POT = "pot"


class Revenue(Enum):
    """The operator's revenue, the party a rake is paid to: the shell maps it to the tenant's revenue account."""

    REVENUE = "revenue"


POT: Final = Pot.POT
REVENUE: Final = Revenue.REVENUE
Party: TypeAlias = int | Pot | Revenue


class TransferKind(StrEnum):
    ANTE = "ante"
    VIGO_CONTRIBUTION = "vigo_contribution"
    CHALLENGE_RAISE = "challenge_raise"
    CHALLENGE_MATCH = "challenge_match"
    PAYOUT = "payout"
    SPLIT = "split"
    RAKE = "rake"


@dataclass(frozen=True)
class Transfer:
    """One leg pair: `amount` minor units from `payer` to `payee`; exactly one side is the pot, the other a
    seat or (for a rake) the operator's revenue."""

    kind: TransferKind
    payer: Party
    payee: Party
    amount: int

    def __post_init__(self) -> None:
        if self.amount <= 0:
            raise ValueError(f"a transfer moves a positive amount, not {self.amount}")
        if (self.payer is POT) == (self.payee is POT):
            raise ValueError("a transfer moves money between a seat and the pot")
        if (self.kind is TransferKind.RAKE) != (self.payee is REVENUE) or self.payer is REVENUE:
            raise ValueError("a rake, and only a rake, moves money from the pot to the operator's revenue")

    @property
    def into_pot(self) -> bool:
        return self.payee is POT

    @property
    def seat(self) -> int:
        """The seat on the other side of the pot (a rake has none)."""
        party = self.payer if self.into_pot else self.payee
        return of_type(party, int, "a seat on the other side of the pot")

    def to_dict(self) -> JSONObject:
        return {
            "kind": self.kind.value,
            "payer": party_to_json(self.payer),
            "payee": party_to_json(self.payee),
            "amount": self.amount,
        }


def party_to_json(party: Party) -> int | str:
    return party.value if isinstance(party, Pot | Revenue) else party
