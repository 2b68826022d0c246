"""The game facts both signed documents repeat: who sits where and what is at stake (integer minor units)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pokna_verify.fairness.json_reader import JsonReader

VIGO_SEAT = 0


@dataclass(frozen=True, slots=True)
class SeatAccount:
    """`label` is the operator's display name for the seat, given at creation. It is written only when set,
    so a game without labels signs the same document as before labels existed."""

    seat: int
    account_id: str
    label: str | None = None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"seat": self.seat, "account_id": self.account_id}
        if self.label is not None:
            document["label"] = self.label
        return document

    @classmethod
    def read(cls, reader: JsonReader) -> SeatAccount:
        return cls(
            seat=reader.integer("seat"),
            account_id=reader.string("account_id"),
            label=reader.optional_string("label"),
        )


@dataclass(frozen=True, slots=True)
class GameTerms:
    """`seats` lists the Vigo as seat 0, then players 1..n clockwise.

    The rake terms (`rake_bps` of each pot paid out, at most `rake_cap` minor units; None is uncapped) are
    written only when set, so a game without a rake signs the same document as before rakes existed, and
    a document without them means no rake."""

    stake: int
    challenge_raise: int
    seats: tuple[SeatAccount, ...]
    rake_bps: int = 0
    rake_cap: int | None = None

    @classmethod
    def of(
        cls,
        stake: int,
        challenge_raise: int,
        seats: Sequence[SeatAccount],
        *,
        rake_bps: int = 0,
        rake_cap: int | None = None,
    ) -> GameTerms:
        return cls(
            stake=stake,
            challenge_raise=challenge_raise,
            seats=tuple(seats),
            rake_bps=rake_bps,
            rake_cap=rake_cap,
        )

    @property
    def has_rake_terms(self) -> bool:
        return self.rake_bps != 0 or self.rake_cap is not None

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"stake": self.stake, "challenge_raise": self.challenge_raise}
        if self.has_rake_terms:
            document["rake_bps"] = self.rake_bps
            if self.rake_cap is not None:
                document["rake_cap"] = self.rake_cap
        document["seats"] = [seat.to_json() for seat in self.seats]
        return document

    @classmethod
    def read(cls, reader: JsonReader) -> GameTerms:
        return cls(
            stake=reader.integer("stake"),
            challenge_raise=reader.integer("challenge_raise"),
            seats=tuple(SeatAccount.read(item) for item in reader.objects("seats")),
            rake_bps=reader.optional_integer("rake_bps", 0) or 0,
            rake_cap=reader.optional_integer("rake_cap", None),
        )


def rake_terms_of(game: Mapping[str, Any]) -> tuple[object, object]:
    """A signed document's rake terms as (bps, cap), absent ones as the no-rake defaults (0, None)."""
    bps = game.get("rake_bps")
    return (0 if bps is None else bps), game.get("rake_cap")
