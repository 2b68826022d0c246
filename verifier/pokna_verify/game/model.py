"""The state of one round of Pokna: the Vigo at seat 0 and 1-11 players at seats 1..n, clockwise."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from pokna_verify.game.cube import Color
from pokna_verify.game.errors import InvalidConfig

VIGO_SEAT: Final = 0
MIN_PLAYERS: Final = 1
MAX_PLAYERS: Final = 11
BPS_PER_WHOLE: Final = 10_000


class Phase(StrEnum):
    OPEN = "open"
    SEEKING = "seeking"
    VOTING = "voting"
    LONE_SURVIVOR = "lone_survivor"
    CHALLENGE_FAVOR = "challenge_favor"
    CHALLENGE_ROLL = "challenge_roll"
    SETTLED = "settled"
    CANCELLED = "cancelled"


FINAL_PHASES: Final = frozenset({Phase.SETTLED, Phase.CANCELLED})


class SeatStatus(StrEnum):
    """A player is in favor until a roll that misses the favor eliminates them."""

    VIGO = "vigo"
    IN_FAVOR = "in_favor"
    ELIMINATED = "eliminated"


class VoteChoice(StrEnum):
    SPLIT = "split"
    ROLL_AGAIN = "roll_again"


class SettleReason(StrEnum):
    NO_SURVIVORS = "no_survivors"
    CLAIMED = "claimed"
    CHALLENGE_WON = "challenge_won"
    CHALLENGE_LOST = "challenge_lost"
    SPLIT = "split"
    VIGO_BUST = "vigo_bust"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class GameConfig:
    """Everything about the bet is fixed here, before any roll exists, so no one sizes a bet on known rolls."""

    stake: int
    challenge_raise: int
    player_count: int
    rake_bps: int = 0
    rake_cap: int | None = None

    def __post_init__(self) -> None:
        for name in ("stake", "challenge_raise", "player_count", "rake_bps"):
            if not _is_int(getattr(self, name)):
                raise InvalidConfig(f"{name} must be an integer", field=name)
        if self.rake_cap is not None and not _is_int(self.rake_cap):
            raise InvalidConfig("rake_cap must be an integer or absent", field="rake_cap")
        if self.stake <= 0:
            raise InvalidConfig(f"the stake must be positive, not {self.stake}", field="stake")
        if self.challenge_raise <= 0:
            raise InvalidConfig(
                f"the challenge raise must be positive, not {self.challenge_raise}", field="challenge_raise"
            )
        if not MIN_PLAYERS <= self.player_count <= MAX_PLAYERS:
            raise InvalidConfig(
                f"a table seats {MIN_PLAYERS} to {MAX_PLAYERS} players besides the Vigo, not {self.player_count}",
                field="player_count",
            )
        if not 0 <= self.rake_bps <= BPS_PER_WHOLE:
            raise InvalidConfig(
                f"the rake is 0 to {BPS_PER_WHOLE} basis points of the pot, not {self.rake_bps}",
                field="rake_bps",
            )
        if self.rake_cap is not None and self.rake_cap < 0:
            raise InvalidConfig(f"the rake cap must not be negative, not {self.rake_cap}", field="rake_cap")

    @classmethod
    def create(
        cls,
        *,
        stake: int,
        player_count: int,
        challenge_raise: int | None = None,
        rake_bps: int = 0,
        rake_cap: int | None = None,
    ) -> GameConfig:
        """The card has the Vigo 'increase the stake' on a challenge; by default by one more stake."""
        return cls(
            stake=stake,
            challenge_raise=stake if challenge_raise is None else challenge_raise,
            player_count=player_count,
            rake_bps=rake_bps,
            rake_cap=rake_cap,
        )

    def rake_on(self, pot: int) -> int:
        """The house's share of a pot paid out: the rate rounded down, then capped (docs/rules.md, "Rake")."""
        rake = pot * self.rake_bps // BPS_PER_WHOLE
        return rake if self.rake_cap is None else min(rake, self.rake_cap)

    @property
    def seats(self) -> range:
        return range(VIGO_SEAT, self.player_count + 1)

    @property
    def players(self) -> range:
        return range(VIGO_SEAT + 1, self.player_count + 1)


@dataclass(frozen=True)
class Ballot:
    seat: int
    choice: VoteChoice


@dataclass(frozen=True)
class Payout:
    seat: int
    amount: int


@dataclass(frozen=True)
class Outcome:
    reason: SettleReason
    payouts: tuple[Payout, ...]


@dataclass(frozen=True)
class GameState:
    """Immutable, so a refused action cannot leave a half-applied state behind.

    `paid_in` and `paid_out` are per seat and `rake` is what the house took, so anyone can check that the
    pot is exactly what went in minus what came out: `pot == sum(paid_in) - sum(paid_out) - rake`.
    """

    config: GameConfig
    phase: Phase
    favor: Color | None
    pot: int
    statuses: tuple[SeatStatus, ...]
    to_roll: tuple[int, ...]
    votes: tuple[Ballot, ...]
    pass_number: int
    challenger: int | None
    next_nonce: int
    paid_in: tuple[int, ...]
    paid_out: tuple[int, ...]
    outcome: Outcome | None
    rake: int = 0

    @property
    def survivors(self) -> tuple[int, ...]:
        """Players still in favor, in clockwise order from the Vigo."""
        return tuple(seat for seat in self.config.players if self.statuses[seat] is SeatStatus.IN_FAVOR)

    @property
    def is_over(self) -> bool:
        return self.phase in FINAL_PHASES

    def voted(self, seat: int) -> bool:
        return any(ballot.seat == seat for ballot in self.votes)


def new_game(config: GameConfig) -> GameState:
    seat_count = config.player_count + 1
    return GameState(
        config=config,
        phase=Phase.OPEN,
        favor=None,
        pot=0,
        statuses=(SeatStatus.VIGO,) + (SeatStatus.IN_FAVOR,) * config.player_count,
        to_roll=(),
        votes=(),
        pass_number=0,
        challenger=None,
        next_nonce=0,
        paid_in=(0,) * seat_count,
        paid_out=(0,) * seat_count,
        outcome=None,
    )
