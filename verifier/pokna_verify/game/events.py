"""What happened, in order: every roll, decision and money movement of a game is one of these.

Events are the game's public record. Each is a frozen dataclass with a `kind` and JSON-friendly fields;
`to_dict()` is the form stored in the game log and shown to players.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from pokna_verify.game.cube import Color
from pokna_verify.game.json_value import JSONObject, field_names, to_json_value
from pokna_verify.game.model import Ballot, Payout, Phase, SettleReason, VoteChoice


class EventKind(StrEnum):
    GAME_STARTED = "game_started"
    ANTED = "anted"
    ROLLED = "rolled"
    PASS_STARTED = "pass_started"  # noqa: S105 - a pass of rolls, not a password
    ELIMINATED = "eliminated"
    PASS_ENDED = "pass_ended"  # noqa: S105
    VIGO_CONTRIBUTED = "vigo_contributed"
    VIGO_BUST = "vigo_bust"
    VOTED = "voted"
    VOTE_DECIDED = "vote_decided"
    CLAIMED = "claimed"
    CHALLENGED = "challenged"
    CHALLENGE_STAKED = "challenge_staked"
    RAKED = "raked"
    SETTLED = "settled"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"


class RollPurpose(StrEnum):
    FAVOR = "favor"
    SEEK = "seek"
    CHALLENGE_FAVOR = "challenge_favor"
    CHALLENGE = "challenge"


@dataclass(frozen=True)
class Event:
    kind: ClassVar[EventKind]

    def to_dict(self) -> JSONObject:
        record: JSONObject = {"kind": self.kind.value}
        for name in field_names(type(self)):
            value = getattr(self, name)
            kind = type(value)
            # to_json_value's own first test, in place: most fields are plain numbers and text
            plain = kind is int or kind is str or kind is bool or value is None
            record[name] = value if plain else to_json_value(value)
        return record


@dataclass(frozen=True)
class GameStarted(Event):
    kind = EventKind.GAME_STARTED
    stake: int
    challenge_raise: int
    player_count: int


@dataclass(frozen=True)
class Anted(Event):
    kind = EventKind.ANTED
    seat: int
    amount: int
    pot: int


@dataclass(frozen=True)
class Rolled(Event):
    """`in_favor` is None for the Vigo's rolls: they set the favor rather than seek it."""

    kind = EventKind.ROLLED
    nonce: int
    seat: int
    purpose: RollPurpose
    face: int
    color: Color
    favor: Color
    in_favor: bool | None


@dataclass(frozen=True)
class PassStarted(Event):
    kind = EventKind.PASS_STARTED
    pass_number: int
    seats: tuple[int, ...]
    favor: Color


@dataclass(frozen=True)
class Eliminated(Event):
    kind = EventKind.ELIMINATED
    seat: int
    pass_number: int


@dataclass(frozen=True)
class PassEnded(Event):
    kind = EventKind.PASS_ENDED
    pass_number: int
    survivors: tuple[int, ...]


@dataclass(frozen=True)
class VigoContributed(Event):
    kind = EventKind.VIGO_CONTRIBUTED
    amount: int
    survivors: tuple[int, ...]
    pot: int


@dataclass(frozen=True)
class VigoBust(Event):
    """The Vigo could not put in `needed`; the survivors share the pot at once instead."""

    kind = EventKind.VIGO_BUST
    needed: int
    survivors: tuple[int, ...]


@dataclass(frozen=True)
class Voted(Event):
    kind = EventKind.VOTED
    seat: int
    choice: VoteChoice


@dataclass(frozen=True)
class VoteDecided(Event):
    kind = EventKind.VOTE_DECIDED
    decision: VoteChoice
    votes: tuple[Ballot, ...]


@dataclass(frozen=True)
class Claimed(Event):
    kind = EventKind.CLAIMED
    seat: int
    pot: int


@dataclass(frozen=True)
class Challenged(Event):
    kind = EventKind.CHALLENGED
    seat: int


@dataclass(frozen=True)
class ChallengeStaked(Event):
    """The Vigo's raise and the challenger's match, posted together."""

    kind = EventKind.CHALLENGE_STAKED
    seat: int
    raise_amount: int
    pot: int


@dataclass(frozen=True)
class Settled(Event):
    kind = EventKind.SETTLED
    reason: SettleReason
    payouts: tuple[Payout, ...]
    pot: int


@dataclass(frozen=True)
class Raked(Event):
    """The house's share, taken from the pot as it is paid out and before the payouts (only when above 0)."""

    kind = EventKind.RAKED
    amount: int
    pot: int
    rake_bps: int
    rake_cap: int | None


@dataclass(frozen=True)
class Cancelled(Event):
    kind = EventKind.CANCELLED


@dataclass(frozen=True)
class TimedOut(Event):
    """Precedes the events of the default action applied on behalf of `seats`."""

    kind = EventKind.TIMED_OUT
    phase: Phase
    seats: tuple[int, ...]
    default_action: str
