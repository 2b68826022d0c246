"""The rake in the exact odds when survivors always roll again.

There the final pot has no bound, and the rake is not linear in it (rounded down, capped), so the chain
of `pokna_verify.game.odds` (which carries expected pots) is not enough. What the rake needs of a final pot is
finite, though:

- uncapped, `floor(pot * bps / 10000)` is `(pot * bps - r) / 10000` where `r = pot * bps mod 10000`
  depends only on `pot mod m`, with `m = 10000 / gcd(bps, 10000)`: so the chain runs on pots mod m, and
  the expected rake follows from the expected pot and the distribution of those residues;
- capped, every pot from `T = ceil(cap * 10000 / bps)` on pays exactly the cap: so the chain runs on
  pots up to T, all larger pots folded into T.

Either way the number of classes is bounded (MAX_POT_CLASSES) and larger ones are refused: the exact
fractions grow with the classes (a cycle of L classes has a denominator of about k·L bits), and so does
the time.

Either way a pass's self-loop (every player survives, the Vigo pays, they roll again) moves the pot class
around a cycle (residues) or up to T, and is solved exactly (`_visits`). All values are `Fraction`s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from math import comb, gcd

from pokna_verify.game.errors import InvalidConfig
from pokna_verify.game.model import BPS_PER_WHOLE, GameConfig

MAX_POT_CLASSES = 101
VIGO, PLAYERS = "vigo", "players"


@dataclass(frozen=True)
class _Classes:
    count: int
    fold: Callable[[int], int]
    capped: bool


def expected_rake_by_winner(
    config: GameConfig, challenge: bool, expected_pot: dict[str, Fraction]
) -> dict[str, Fraction]:
    """E[rake, if that side takes the pot] for the Vigo and for the players, every player always rolling
    again and, as lone survivor, challenging or not. `expected_pot` is E[final pot, if that side takes
    it] (before the rake), from the expected-value chain."""
    if config.rake_bps == 0 or config.rake_cap == 0:
        return {VIGO: Fraction(0), PLAYERS: Fraction(0)}
    classes = _classes_of(config)
    ends = _final_pot_classes(config, challenge, classes)
    if classes.capped:
        return {
            side: sum((chance * config.rake_on(pot) for (owner, pot), chance in ends.items() if owner == side),
                      Fraction(0))
            for side in (VIGO, PLAYERS)
        }  # fmt: skip
    bps = config.rake_bps
    return {
        side: (
            bps * expected_pot[side]
            - sum(
                (chance * (residue * bps % BPS_PER_WHOLE) for (owner, residue), chance in ends.items() if owner == side),
                Fraction(0),
            )
        )
        / BPS_PER_WHOLE
        for side in (VIGO, PLAYERS)
    }  # fmt: skip


def _classes_of(config: GameConfig) -> _Classes:
    bps = config.rake_bps
    if config.rake_cap is None:
        modulus = BPS_PER_WHOLE // gcd(bps, BPS_PER_WHOLE)
        if modulus > MAX_POT_CLASSES:
            raise InvalidConfig(
                f"exact odds follow every pot modulo {modulus} at {bps} basis points; at most {MAX_POT_CLASSES} "
                "classes are enumerated: a rate dividing 10000 into at most that many parts, or a cap",
                field="rake_bps",
            )
        return _Classes(modulus, lambda pot: pot % modulus, capped=False)
    saturation = -(-config.rake_cap * BPS_PER_WHOLE // bps)
    if saturation + 1 > MAX_POT_CLASSES:
        raise InvalidConfig(
            f"exact odds follow every pot below the one where the cap applies ({saturation}); at most "
            f"{MAX_POT_CLASSES} pots are enumerated: a smaller cap, a higher rate or no cap",
            field="rake_cap",
        )
    return _Classes(saturation + 1, lambda pot: min(pot, saturation), capped=True)


def _final_pot_classes(
    config: GameConfig, challenge: bool, classes: _Classes
) -> dict[tuple[str, int], Fraction]:
    """The probability that each side takes a final pot of each class."""
    stake, raise_amount, n = config.stake, config.challenge_raise, config.player_count
    fold = classes.fold
    inflow: dict[int, dict[int, Fraction]] = {k: {} for k in range(2, n + 1)}
    inflow[n][fold(n * stake)] = Fraction(1)
    ends: dict[tuple[str, int], Fraction] = {}

    def end(side: str, pot: int, chance: Fraction) -> None:
        ends[(side, pot)] = ends.get((side, pot), Fraction(0)) + chance

    for k in range(n, 1, -1):
        visits = _visits(inflow[k], Fraction(1, 2**k), k * stake, classes)
        for pot, visited in visits.items():
            for j in range(k):
                chance = visited * Fraction(comb(k, j), 2**k)
                if j == 0:
                    end(VIGO, pot, chance)
                elif j == 1 and not challenge:
                    end(PLAYERS, pot, chance)
                elif j == 1:
                    final = fold(pot + 2 * raise_amount)
                    end(VIGO, final, chance / 2)
                    end(PLAYERS, final, chance / 2)
                else:
                    after = fold(pot + j * stake)
                    inflow[j][after] = inflow[j].get(after, Fraction(0)) + chance
    return ends


def _visits(
    arrivals: dict[int, Fraction], stay: Fraction, step: int, classes: _Classes
) -> dict[int, Fraction]:
    """Expected passes started at each pot class, for `arrivals` into a pass of k players where all of
    them survive with probability `stay` and the pot then grows by `step`: v(d) = a(d) + stay * v(d')
    summed over the d' that grow into d."""
    if not arrivals:
        return {}
    if classes.capped:
        top = classes.count - 1
        visits: dict[int, Fraction] = {}
        for pot in range(top):
            before = visits.get(pot - step, Fraction(0)) if pot >= step else Fraction(0)
            value = arrivals.get(pot, Fraction(0)) + stay * before
            if value:
                visits[pot] = value
        into_top = sum((value for pot, value in visits.items() if pot + step >= top), Fraction(0))
        visits[top] = (arrivals.get(top, Fraction(0)) + stay * into_top) / (1 - stay)
        return {pot: value for pot, value in visits.items() if value}
    modulus = classes.count
    visits = {}
    for start in arrivals:
        if start in visits:
            continue
        cycle = [start]
        while (following := (cycle[-1] + step) % modulus) != start:
            cycle.append(following)
        # Around the cycle v[i] = a[i] + stay * v[i-1]: unroll once from the start, then walk on.
        length = len(cycle)
        total = Fraction(0)
        weight = Fraction(1)
        for back in range(length):
            total += weight * arrivals.get(cycle[-back % length], Fraction(0))
            weight *= stay
        value = total / (1 - weight)
        visits[start] = value
        for pot in cycle[1:]:
            value = arrivals.get(pot, Fraction(0)) + stay * value
            visits[pot] = value
    return {pot: value for pot, value in visits.items() if value}
