"""Exact odds of Pokna under fixed decision policies, with unlimited balances (no Vigo bust).

Every roll matches the favor with probability exactly 1/2 whatever the favor, so the Vigo's favor roll
never matters and a pass with k players rolling leaves Binomial(k, 1/2) survivors.

- Survivors always split: the game lasts one pass, so every set of survivors (2^n of them, n <= 11) is
  enumerated, remainders of the split included.
- Survivors always roll again: a single roll_again vote decides, so no pot is ever split and the players
  are exchangeable. The number of survivors is then a Markov chain that ends at 0 or 1 survivors with
  probability 1 (all k survive a pass with probability 2^-k < 1); its self-loops are solved exactly.

With rake terms, every pot paid out pays the house its rake first (docs/rules.md, "Rake"): the seats'
payouts are net of it, and the operator's expected revenue per game is the expected rake
(`pokna_verify.game.odds_rake` for roll-again, where the final pot is unbounded).

All values are `Fraction`s: nothing is sampled.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from math import comb

from pokna_verify.game.json_value import JSONObject
from pokna_verify.game.model import VIGO_SEAT, GameConfig
from pokna_verify.game.odds_rake import PLAYERS, VIGO, expected_rake_by_winner
from pokna_verify.game.split import split_pot

HALF = Fraction(1, 2)


class LonePolicy(StrEnum):
    CLAIM = "claim"
    CHALLENGE = "challenge"


class VotePolicy(StrEnum):
    SPLIT = "split"
    ROLL_AGAIN = "roll_again"


@dataclass(frozen=True)
class Policy:
    """What every player does: as a lone survivor, and when two or more survivors vote."""

    lone: LonePolicy
    vote: VotePolicy

    @property
    def label(self) -> str:
        return f"lone survivor {self.lone.value}s; survivors {self.vote.value.replace('_', ' ')}"


@dataclass(frozen=True)
class SeatOdds:
    """`whole_pot`: takes the entire pot; `split_share`: gets a share of a split. Amounts in minor units."""

    seat: int
    whole_pot: Fraction
    split_share: Fraction
    expected_paid_in: Fraction
    expected_paid_out: Fraction

    @property
    def win(self) -> Fraction:
        """Probability of being paid anything: a whole pot or a share of a split (without a rake a share
        always exceeds the ante; a rake may leave less)."""
        return self.whole_pot + self.split_share

    @property
    def expected_net(self) -> Fraction:
        return self.expected_paid_out - self.expected_paid_in


@dataclass(frozen=True)
class TableOdds:
    """`expected_rake` is the operator's expected revenue per game, minor units."""

    config: GameConfig
    policy: Policy
    seats: tuple[SeatOdds, ...]
    expected_rake: Fraction = Fraction(0)

    def expected_net_in_stakes(self, seat: int) -> Fraction:
        return self.seats[seat].expected_net / self.config.stake

    @property
    def expected_staked(self) -> Fraction:
        """Everything the seats are expected to pay into a game's pot."""
        return sum((odds.expected_paid_in for odds in self.seats), Fraction(0))

    @property
    def rake_per_unit_staked(self) -> Fraction:
        return self.expected_rake / self.expected_staked

    def to_dict(self) -> JSONObject:
        """Exact values as "p/q" strings, with a float beside each for people and plots."""

        def exact(value: Fraction) -> JSONObject:
            return {"exact": str(value), "approx": float(value)}

        return {
            "lone": self.policy.lone.value,
            "vote": self.policy.vote.value,
            "operator": {
                "expected_revenue": exact(self.expected_rake),
                "expected_staked": exact(self.expected_staked),
                "revenue_per_unit_staked": exact(self.rake_per_unit_staked),
            },
            "seats": [
                {
                    "seat": odds.seat,
                    "role": "vigo" if odds.seat == VIGO_SEAT else "player",
                    "win": exact(odds.win),
                    "whole_pot": exact(odds.whole_pot),
                    "split_share": exact(odds.split_share),
                    "expected_paid_in": exact(odds.expected_paid_in),
                    "expected_paid_out": exact(odds.expected_paid_out),
                    "expected_net": exact(odds.expected_net),
                    "expected_net_stakes": exact(self.expected_net_in_stakes(odds.seat)),
                }
                for odds in self.seats
            ],
        }


def policies_for(player_count: int) -> tuple[Policy, ...]:
    """With one player there is never a vote, so the vote policy would only duplicate rows."""
    votes = (VotePolicy.SPLIT,) if player_count == 1 else tuple(VotePolicy)
    return tuple(Policy(lone, vote) for vote in votes for lone in LonePolicy)


def table_odds(config: GameConfig, policy: Policy) -> TableOdds:
    if policy.vote is VotePolicy.SPLIT or config.player_count == 1:
        return _always_split(config, policy.lone)
    return _always_roll_again(config, policy.lone)


class _Tally:
    def __init__(self, config: GameConfig) -> None:
        zeros = [Fraction(0)] * (config.player_count + 1)
        self.whole, self.share, self.paid_in, self.paid_out = (list(zeros) for _ in range(4))
        self.config = config
        self.rake = Fraction(0)

    def pay(self, chance: Fraction, pot: int, winners: tuple[int, ...]) -> int:
        """The pot paid out with probability `chance`: the rake first, the rest to `winners`."""
        rake = self.config.rake_on(pot)
        self.rake += chance * rake
        for payout in split_pot(pot - rake, winners):
            self.paid_out[payout.seat] += chance * payout.amount
        return rake

    def odds(self) -> tuple[SeatOdds, ...]:
        return tuple(
            SeatOdds(seat, self.whole[seat], self.share[seat], self.paid_in[seat], self.paid_out[seat])
            for seat in range(len(self.whole))
        )


def _always_split(config: GameConfig, lone: LonePolicy) -> TableOdds:
    n, stake, raise_amount = config.player_count, config.stake, config.challenge_raise
    tally = _Tally(config)
    each = Fraction(1, 2**n)
    for seat in config.players:
        tally.paid_in[seat] = Fraction(stake)
    ante_pot = n * stake
    for mask in range(2**n):
        survivors = tuple(seat for seat in config.players if mask >> (seat - 1) & 1)
        if not survivors:
            tally.whole[VIGO_SEAT] += each
            tally.pay(each, ante_pot, (VIGO_SEAT,))
        elif len(survivors) == 1:
            _lone_survivor(tally, survivors[0], each, ante_pot, raise_amount, lone)
        else:
            contribution = stake * len(survivors)
            tally.paid_in[VIGO_SEAT] += each * contribution
            for seat in survivors:
                tally.share[seat] += each
            tally.pay(each, ante_pot + contribution, survivors)
    return TableOdds(config, Policy(lone, VotePolicy.SPLIT), tally.odds(), tally.rake)


def _lone_survivor(
    tally: _Tally, seat: int, chance: Fraction, pot: int, raise_amount: int, lone: LonePolicy
) -> None:
    if lone is LonePolicy.CLAIM:
        tally.whole[seat] += chance
        tally.pay(chance, pot, (seat,))
        return
    tally.paid_in[seat] += chance * raise_amount
    tally.paid_in[VIGO_SEAT] += chance * raise_amount
    for winner in (seat, VIGO_SEAT):
        tally.whole[winner] += chance * HALF
        tally.pay(chance * HALF, pot + 2 * raise_amount, (winner,))


@dataclass(frozen=True)
class _PassValue:
    """From the start of a pass with k players rolling, up to the end of the game.

    `*_extra` is the expected money added to the pot after this point and won by that side; the pot
    already present is won with probability `vigo`/`players`.
    """

    vigo: Fraction
    players: Fraction
    challenge: Fraction
    vigo_extra: Fraction
    players_extra: Fraction
    contributions: Fraction


def _always_roll_again(config: GameConfig, lone: LonePolicy) -> TableOdds:
    n, stake, raise_amount = config.player_count, config.stake, config.challenge_raise
    chain: dict[int, _PassValue] = {}
    for k in range(1, n + 1):
        chain[k] = _pass_value(k, chain, stake, raise_amount, lone)
    start = chain[n]
    ante_pot = n * stake
    pots = {
        VIGO: ante_pot * start.vigo + start.vigo_extra,
        PLAYERS: ante_pot * start.players + start.players_extra,
    }
    rake = expected_rake_by_winner(config, lone is LonePolicy.CHALLENGE, pots)
    tally = _Tally(config)
    tally.whole[VIGO_SEAT] = start.vigo
    tally.paid_in[VIGO_SEAT] = start.contributions + raise_amount * start.challenge
    tally.paid_out[VIGO_SEAT] = pots[VIGO] - rake[VIGO]
    for seat in config.players:
        tally.whole[seat] = start.players / n
        tally.paid_in[seat] = stake + raise_amount * start.challenge / n
        tally.paid_out[seat] = (pots[PLAYERS] - rake[PLAYERS]) / n
    return TableOdds(config, Policy(lone, VotePolicy.ROLL_AGAIN), tally.odds(), rake[VIGO] + rake[PLAYERS])


def _pass_value(
    k: int, chain: dict[int, _PassValue], stake: int, raise_amount: int, lone: LonePolicy
) -> _PassValue:
    """Solve value(k) = sum_j P(j survive) * next(j), where j == k loops back to value(k) itself."""
    vigo = players = challenge = vigo_extra = players_extra = contributions = Fraction(0)
    for j in range(k + 1):
        if j == k >= 2:
            continue  # the self-loop, solved below
        chance = Fraction(comb(k, j), 2**k)
        if j == 0:
            vigo += chance
        elif j == 1 and lone is LonePolicy.CLAIM:
            players += chance
        elif j == 1:
            challenge += chance
            vigo += chance * HALF
            players += chance * HALF
            vigo_extra += chance * HALF * 2 * raise_amount
            players_extra += chance * HALF * 2 * raise_amount
        else:
            after = chain[j]
            contribution = j * stake
            vigo += chance * after.vigo
            players += chance * after.players
            challenge += chance * after.challenge
            vigo_extra += chance * (contribution * after.vigo + after.vigo_extra)
            players_extra += chance * (contribution * after.players + after.players_extra)
            contributions += chance * (contribution + after.contributions)
    if k == 1:
        return _PassValue(vigo, players, challenge, vigo_extra, players_extra, contributions)
    stay = Fraction(1, 2**k)
    keep = 1 - stay
    contribution = k * stake
    vigo, players, challenge = vigo / keep, players / keep, challenge / keep
    return _PassValue(
        vigo=vigo,
        players=players,
        challenge=challenge,
        vigo_extra=(vigo_extra + stay * contribution * vigo) / keep,
        players_extra=(players_extra + stay * contribution * players) / keep,
        contributions=(contributions + stay * contribution) / keep,
    )
