"""How far one game's money strays from its expectation, under the fixed policies of `pokna_verify.game.odds`.

An audit report compares a period's realized return with the exact expectation (`table_odds`) and must say
how far chance alone could take it: that needs the second moments of what each side pays into a game and
is paid out of it. The expectations stay odds.py's; this module adds E[in^2], E[out^2] and E[in*out].

Three sides, as a regulator reads them: the Vigo, the players together, and the operator (paid in: all the
seats staked; paid out: the rake). What a side pays and is paid depends only on the number of survivors
at each pass, never on which players they are, so the enumeration runs over those numbers:

- always split: one pass (and perhaps a challenge), enumerated whole: exact;
- always roll again: passes where two or more survive loop on with a contribution from the Vigo each
  time, without bound. Each branch is followed until its probability is below 2^-96 and what is left is
  reported as `unaccounted` (far below 10^-20 for every table); the moments are exact for the rest.

Unlimited balances, as in odds.py. All values are `Fraction`s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import comb

from pokna_verify.game.model import GameConfig
from pokna_verify.game.odds import HALF, LonePolicy, Policy, VotePolicy

_NEGLIGIBLE = Fraction(1, 2**96)


@dataclass
class SideMoments:
    """One side's money in one game (minor units): the first and second moments of what it pays in and
    is paid out."""

    paid_in: Fraction = Fraction(0)
    paid_out: Fraction = Fraction(0)
    paid_in_squared: Fraction = Fraction(0)
    paid_out_squared: Fraction = Fraction(0)
    paid_in_times_out: Fraction = Fraction(0)

    def add(self, chance: Fraction, paid_in: int, paid_out: int) -> None:
        self.paid_in += chance * paid_in
        self.paid_out += chance * paid_out
        self.paid_in_squared += chance * paid_in * paid_in
        self.paid_out_squared += chance * paid_out * paid_out
        self.paid_in_times_out += chance * paid_in * paid_out

    def spread_about(self, ratio: Fraction) -> Fraction:
        """E[(out - ratio * in)^2]. Over N games the realized ratio sum(out) / sum(in) is then close to
        normal about E[out] / E[in], with variance this / (N * E[in]^2) (the delta method), when `ratio` is
        E[out] / E[in]."""
        return (
            self.paid_out_squared - 2 * ratio * self.paid_in_times_out + ratio * ratio * self.paid_in_squared
        )


@dataclass
class GameSpread:
    config: GameConfig
    policy: Policy
    vigo: SideMoments = field(default_factory=SideMoments)
    players: SideMoments = field(default_factory=SideMoments)
    operator: SideMoments = field(default_factory=SideMoments)
    unaccounted: Fraction = Fraction(0)  # probability of the games too long to follow (roll again only)

    def sides(self) -> dict[str, SideMoments]:
        return {"vigo": self.vigo, "players": self.players, "operator": self.operator}

    def settle(self, chance: Fraction, vigo_in: int, players_in: int, vigo_takes_it: bool) -> None:
        """A game that ends with this much paid in by each side, the pot going to one side."""
        pot = vigo_in + players_in
        rake = self.config.rake_on(pot)
        self.vigo.add(chance, vigo_in, pot - rake if vigo_takes_it else 0)
        self.players.add(chance, players_in, 0 if vigo_takes_it else pot - rake)
        self.operator.add(chance, pot, rake)


def game_spread(config: GameConfig, policy: Policy) -> GameSpread:
    """The moments of one game's money for each side, every player following `policy`."""
    spread = GameSpread(config, policy)
    n, stake, raise_amount = config.player_count, config.stake, config.challenge_raise
    antes = n * stake
    roll_again = policy.vote is VotePolicy.ROLL_AGAIN and n > 1
    # Passes still to play, by players rolling: the Vigo's contributions so far -> probability. A pass leads
    # only to passes of as many players (the Vigo paid more) or fewer, so taking the most players first,
    # the least paid first, every way into a pass is counted before it is played.
    waiting: dict[int, dict[int, Fraction]] = {rolling: {} for rolling in range(1, n + 1)}
    waiting[n][0] = Fraction(1)
    for rolling in range(n, 0, -1):
        passes = waiting[rolling]
        while passes:
            vigo_in = min(passes)
            reached = passes.pop(vigo_in)
            if reached < _NEGLIGIBLE:
                spread.unaccounted += reached
                continue
            for survivors in range(rolling + 1):
                chance = reached * Fraction(comb(rolling, survivors), 2**rolling)
                if survivors == 0:
                    spread.settle(chance, vigo_in, antes, vigo_takes_it=True)
                elif survivors == 1 and policy.lone is LonePolicy.CLAIM:
                    spread.settle(chance, vigo_in, antes, vigo_takes_it=False)
                elif survivors == 1:
                    for vigo_wins in (True, False):
                        spread.settle(chance * HALF, vigo_in + raise_amount, antes + raise_amount, vigo_wins)
                elif not roll_again:
                    spread.settle(chance, vigo_in + survivors * stake, antes, vigo_takes_it=False)
                else:
                    after = vigo_in + survivors * stake
                    waiting[survivors][after] = waiting[survivors].get(after, Fraction(0)) + chance
    return spread
