"""The game facts both signed documents repeat: who sits where and what is at stake (integer minor units)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pokna.fairness.json_reader import JsonReader

VIGO_SEAT = 0


@dataclass(frozen=True, slots=True)
class SeatAccount:
    seat: int
    account_id: str

    def to_json(self) -> dict[str, Any]:
        return {"seat": self.seat, "account_id": self.account_id}

    @classmethod
    def read(cls, reader: JsonReader) -> SeatAccount:
        return cls(seat=reader.integer("seat"), account_id=reader.string("account_id"))


@dataclass(frozen=True, slots=True)
class GameTerms:
    """`seats` lists the Vigo as seat 0, then players 1..n clockwise."""

    stake: int
    challenge_raise: int
    seats: tuple[SeatAccount, ...]

    @classmethod
    def of(cls, stake: int, challenge_raise: int, seats: Sequence[SeatAccount]) -> GameTerms:
        return cls(stake=stake, challenge_raise=challenge_raise, seats=tuple(seats))

    def to_json(self) -> dict[str, Any]:
        return {
            "stake": self.stake,
            "challenge_raise": self.challenge_raise,
            "seats": [seat.to_json() for seat in self.seats],
        }

    @classmethod
    def read(cls, reader: JsonReader) -> GameTerms:
        return cls(
            stake=reader.integer("stake"),
            challenge_raise=reader.integer("challenge_raise"),
            seats=tuple(SeatAccount.read(item) for item in reader.objects("seats")),
        )
