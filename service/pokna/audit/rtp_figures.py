"""Return to player over a period, per table and per side, against the exact odds. Pure.

A table is a game configuration (players, stake, challenge raise, rake terms) in one currency. Its sides:
the Vigo, the players together, and the operator (its rake per unit staked). A side's realized RTP is what
it was paid out over what it paid in; the theoretical one is the same ratio of the exact expectations of
pokna_verify.game.odds.table_odds (unlimited balances, every player following one policy); for rake terms it
refuses to follow exactly, pokna_verify.game.odds_spread's enumeration of the same rules, and the report says so.

Chance alone keeps the realized ratio of N games close to normal about the theoretical one, with a
standard deviation of sqrt(E[(out - R * in)^2] / N) / E[in] (the delta method for a ratio of sums), where
the second moments are the exact ones of pokna_verify.game.odds_spread. The test's p-value is two-sided.

Which policy? The players' decisions are read from the proofs. Where every decision of a table fits one
policy, that policy's odds apply; where a kind of decision never came up (no lone survivor, say), every
policy that fits is a candidate and the figure is flagged only when it is outside all their intervals.
A table where the players decided both ways, or where a Vigo could not pay (balances, not only the dice,
decided those games), is shown but not tested: the exact odds do not describe it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import isinf, sqrt
from typing import Any

from scipy import stats

from pokna.audit.significance import Test
from pokna_verify.bundle.play_facts import CHALLENGED, CLAIMED, ROLLED_AGAIN, SPLIT, TableTerms
from pokna_verify.bundle.play_tally import TableTally
from pokna_verify.game.errors import InvalidConfig
from pokna_verify.game.model import GameConfig
from pokna_verify.game.odds import LonePolicy, Policy, VotePolicy, policies_for, table_odds
from pokna_verify.game.odds_spread import GameSpread, SideMoments, game_spread

MIN_GAMES = 30
SIDES = ("vigo", "players", "operator")
METHOD = "z of the realized RTP from the theoretical, normal approximation (delta method, exact moments)"


@dataclass(frozen=True)
class Expected:
    """One candidate policy's theoretical ratio for a side, and the standard deviation of one game's share."""

    policy: Policy
    ratio: float
    spread: float  # sqrt(E[(out - R * in)^2]) / E[in]

    def bounds(self, z: float, games: int) -> tuple[float, float]:
        half = z * self.spread / sqrt(games)
        return self.ratio - half, self.ratio + half

    def z(self, realized: float, games: int) -> float:
        """How many standard deviations of N games' ratio the realized one is from the theoretical one."""
        if self.spread == 0:
            return 0.0 if abs(realized - self.ratio) < 1e-12 else float("inf")
        return (realized - self.ratio) / (self.spread / sqrt(games))


@dataclass(frozen=True)
class SideFigures:
    side: str
    staked: int
    returned: int
    games: int
    expected: tuple[Expected, ...]
    test: Test

    @property
    def realized(self) -> float | None:
        return self.returned / self.staked if self.staked else None

    def to_json(self, z: float, level: float) -> dict[str, Any]:
        ratios = [candidate.ratio for candidate in self.expected]
        bounds = [candidate.bounds(z, self.games) for candidate in self.expected] if self.test.ran else []
        return {
            "side": self.side,
            "staked": self.staked,
            "returned": self.returned,
            "net": self.returned - self.staked,
            "rtp": self.realized,
            "theoretical": {"low": min(ratios), "high": max(ratios)} if ratios else None,
            "interval": {"low": min(low for low, _ in bounds), "high": max(high for _, high in bounds)}
            if bounds
            else None,
            "test": self.test.to_json(level),
        }


def candidate_policies(table: TableTally) -> tuple[list[Policy], str]:
    """The policies the table's decisions fit, and the reason in words (no policy: why not)."""
    seen, players = table.decisions, table.terms.players
    if table.vigo_busts:
        return [], (
            f"{table.vigo_busts} game(s) ended with the Vigo unable to pay: balances decided them, and the "
            "exact odds assume balances that never run out"
        )
    lone = _fits(seen, CLAIMED, LonePolicy.CLAIM, CHALLENGED, LonePolicy.CHALLENGE)
    vote = _fits(seen, SPLIT, VotePolicy.SPLIT, ROLLED_AGAIN, VotePolicy.ROLL_AGAIN)
    if lone is None:
        return [], "lone survivors both claimed and challenged: no one policy describes the play"
    if vote is None and players > 1:
        return [], "survivors both split and rolled again: no one policy describes the play"
    policies = [
        policy
        for policy in policies_for(players)
        if policy.lone in lone and (players == 1 or vote is None or policy.vote in vote)
    ]
    labels = "; or ".join(policy.label for policy in policies)
    if len(policies) == 1:
        return policies, f"every decision fits one policy: {labels}"
    return policies, f"some decision never came up; every policy that fits is a candidate: {labels}"


@dataclass(frozen=True)
class TableFigures:
    """A table's sides (the operator's only with rake terms), its candidate policies and why, and where
    the expectations came from."""

    sides: list[SideFigures]
    policies: list[Policy]
    basis: str
    odds_source: str | None


def table_figures(table: TableTally) -> TableFigures:
    policies, basis = candidate_policies(table)
    config = table.config
    expectations: dict[str, list[Expected]] = {side: [] for side in SIDES}
    sources = set()
    for policy in policies:
        spread = game_spread(config, policy)
        means, source = _means(config, policy, spread)
        sources.add(source)
        for side, (paid_in, paid_out) in means.items():
            if paid_in:
                expectations[side].append(_expected(policy, paid_in, paid_out, getattr(spread, side)))
    flows = {
        "vigo": (table.vigo_in, table.vigo_out),
        "players": (table.players_in, table.players_out),
        "operator": (table.pots, table.rake),
    }
    has_rake = config.rake_bps > 0 and config.rake_cap != 0
    sides = []
    for side in SIDES:
        if side == "operator" and not has_rake:
            continue
        staked, returned = flows[side]
        expected = tuple(expectations[side])
        test = _test(table, side, expected, staked, returned)
        sides.append(SideFigures(side, staked, returned, table.games, expected, test))
    return TableFigures(sides, policies, basis, "; ".join(sorted(sources)) or None)


def table_key(terms: TableTerms, currency: str) -> str:
    cap = "uncapped" if terms.rake_cap is None else f"cap {terms.rake_cap}"
    return (
        f"Vigo + {terms.players}, stake {terms.stake}, raise {terms.challenge_raise}, "
        f"rake {terms.rake_bps} bp {cap}, {currency}"
    )


def _means(
    config: GameConfig, policy: Policy, spread: GameSpread
) -> tuple[dict[str, tuple[Fraction, Fraction]], str]:
    """Each side's E[in] and E[out], and their source: table_odds's exact values; where it refuses the
    rake terms (too many pot classes to follow exactly when survivors roll again), the spread's own
    enumeration of the same rules, exact but for the probability it leaves unaccounted (below 10^-20)."""
    try:
        odds = table_odds(config, policy)
    except InvalidConfig as refused:
        means = {side: (moments.paid_in, moments.paid_out) for side, moments in spread.sides().items()}
        return (
            means,
            f"pokna_verify.game.odds_spread's enumeration ({policy.label}: pokna_verify.game.odds refuses: {refused})",
        )
    players_in = sum((seat.expected_paid_in for seat in odds.seats[1:]), Fraction(0))
    players_out = sum((seat.expected_paid_out for seat in odds.seats[1:]), Fraction(0))
    means = {
        "vigo": (odds.seats[0].expected_paid_in, odds.seats[0].expected_paid_out),
        "players": (players_in, players_out),
        "operator": (odds.expected_staked, odds.expected_rake),
    }
    return means, "pokna_verify.game.odds (exact)"


def _expected(policy: Policy, paid_in: Fraction, paid_out: Fraction, moments: SideMoments) -> Expected:
    """The ratio of table_odds's exact expectations; the spread about it from odds_spread's moments."""
    ratio = paid_out / paid_in
    return Expected(policy, float(ratio), sqrt(float(moments.spread_about(ratio))) / float(paid_in))


def _test(table: TableTally, side: str, expected: tuple[Expected, ...], staked: int, returned: int) -> Test:
    name = table_key(table.terms, table.currency)
    key, title = f"rtp.{name}.{side}", f"{_SIDE_TITLES[side]}, {name}"
    if table.games < MIN_GAMES:
        return Test(key, title, METHOD, not_run=f"{table.games} games; at least {MIN_GAMES} needed")
    if not expected:
        return Test(key, title, METHOD, not_run=_NOT_DEFINED)
    if staked == 0:
        return Test(key, title, METHOD, not_run="nothing was staked by this side in these games")
    z = min((candidate.z(returned / staked, table.games) for candidate in expected), key=abs)
    if isinf(z):  # chance cannot move this ratio at all, and it moved
        return Test(key, title, METHOD, None, None, 0.0)
    return Test(key, title, METHOD, z, None, float(2 * stats.norm.sf(abs(z))))


_NOT_DEFINED = (
    "no theoretical RTP: no single policy describes these games, or this side stakes nothing in them on "
    "average (the Vigo with one player who always claims)"
)
_SIDE_TITLES = {
    "vigo": "RTP of the Vigo",
    "players": "RTP of the players",
    "operator": "Rake per unit staked",
}


def _fits(seen: int, one: int, one_policy: Any, other: int, other_policy: Any) -> set[Any] | None:
    """The choices of one kind of decision that fit what was seen: None when both were made."""
    if seen & one and seen & other:
        return None
    if seen & one:
        return {one_policy}
    if seen & other:
        return {other_policy}
    return {one_policy, other_policy}
