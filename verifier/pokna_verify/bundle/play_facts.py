"""What a period's RTP and RNG report needs of one game's proof, taken where the proof is read and checked
(pokna_verify.bundle.proofs, in whichever process read the line): the table's terms, every roll's purpose and face
in nonce order, the decisions the players made and what each side paid in and was paid out. A few dozen
bytes, so a worker sends them back with the proof's verdict and the main process keeps only sums
(pokna_verify.bundle.play_tally).

Pure; nothing here judges the proof: the report is made only of a bundle that verified VALID.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pokna_verify.bundle.money import REVENUE_PARTY
from pokna_verify.fairness.proof import RecordedRoll, TransferRecord
from pokna_verify.fairness.terms import VIGO_SEAT, GameTerms
from pokna_verify.game.model import GameConfig

# Roll purposes as proofs name them (pokna_verify.game.events.RollPurpose), in the report's order.
PURPOSES: Final = ("favor", "seek", "challenge_favor", "challenge")
FACES: Final = 6

# Decisions seen in a game, as bits: what the exact odds' policies (pokna_verify.game.odds) are made of.
CLAIMED: Final = 1  # a lone survivor took the pot (a claim, or a timeout's default)
CHALLENGED: Final = 2  # a lone survivor challenged the Vigo
SPLIT: Final = 4  # two or more survivors split the pot (a vote, or a timeout's default)
ROLLED_AGAIN: Final = 8  # a vote sent the survivors to roll again
VIGO_BUST: Final = 16  # the Vigo could not pay: balances decided the game, not only the dice


@dataclass(frozen=True, slots=True)
class TableTerms:
    """A game configuration as the report groups games: players besides the Vigo, stake, challenge raise,
    rake rate (basis points) and cap (None: uncapped), minor units."""

    players: int
    stake: int
    challenge_raise: int
    rake_bps: int
    rake_cap: int | None

    def config(self) -> GameConfig:
        """The rules' own configuration (its rake_on, its exact odds); a verified proof's terms are valid."""
        return GameConfig(self.stake, self.challenge_raise, self.players, self.rake_bps, self.rake_cap)


@dataclass(frozen=True, slots=True)
class PlayFacts:
    """`rolls`: one byte per roll in nonce order, purpose index (PURPOSES) * 8 + face. Money in minor
    units: the Vigo's and the players' stakes (every transfer into the pot) and returns, and the rake."""

    terms: TableTerms
    cancelled: bool
    rolls: bytes
    decisions: int
    vigo_in: int
    vigo_out: int
    players_in: int
    players_out: int
    rake: int

    @property
    def pot(self) -> int:
        """Everything paid into the pot, which a settled game pays out whole (the rake included)."""
        return self.vigo_in + self.players_in


def roll_code(purpose: int, face: int) -> int:
    return purpose * 8 + face


def play_facts(
    terms: GameTerms,
    rolls: Sequence[RecordedRoll],
    actions: Sequence[Mapping[str, Any]],
    outcome: Mapping[str, Any],
    transfers: Sequence[TransferRecord],
) -> PlayFacts:
    reason = outcome.get("reason")
    flows = {"vigo_in": 0, "vigo_out": 0, "players_in": 0, "players_out": 0, "rake": 0}
    for transfer in transfers:
        for party, direction in ((transfer.payer, "in"), (transfer.payee, "out")):
            if party == REVENUE_PARTY:
                flows["rake"] += transfer.amount
            elif isinstance(party, int):
                flows[f"{'vigo' if party == VIGO_SEAT else 'players'}_{direction}"] += transfer.amount
    codes = bytes(
        roll_code(PURPOSES.index(roll.purpose), roll.face)
        for roll in sorted(rolls, key=lambda roll: roll.nonce)
        if roll.purpose in PURPOSES and 1 <= roll.face <= FACES
    )
    return PlayFacts(
        terms=TableTerms(
            players=len(terms.seats) - 1,
            stake=terms.stake,
            challenge_raise=terms.challenge_raise,
            rake_bps=terms.rake_bps,
            rake_cap=terms.rake_cap,
        ),
        cancelled=reason == "cancelled",
        rolls=codes,
        decisions=_decisions(reason, actions),
        **flows,
    )


def _decisions(reason: object, actions: Sequence[Mapping[str, Any]]) -> int:
    seen = 0
    if reason == "claimed":
        seen |= CLAIMED
    if reason in ("challenge_won", "challenge_lost"):
        seen |= CHALLENGED
    if reason == "split":
        seen |= SPLIT
    if reason == "vigo_bust":
        seen |= VIGO_BUST
    for action in actions:
        if action.get("action") == "challenge":
            seen |= CHALLENGED
        elif action.get("action") == "vote" and action.get("choice") == "roll_again":
            seen |= ROLLED_AGAIN
    return seen
