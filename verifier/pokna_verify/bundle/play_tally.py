"""The sums a period's RTP and RNG report is made of, kept while the bundle is checked, in the same pass.

A game counts in the period in which its pot was paid out: the time of its last transfer. Its facts
(pokna_verify.bundle.play_facts) wait from its record until that transfer is read, then go into the sums and are
dropped, so memory holds the games open in the range and a few counters per table, never a list of games.

- Money, per table (terms and currency): games, what the Vigo and the players paid in and were paid out,
  the rake, the pots, games whose rake differs from the terms' on their pot, and the decisions seen.
- Rolls: faces per roll purpose; pairs of consecutive rolls within a game (faces, in nonce order); and
  the colour changes between them, for the runs test.

Pure: pokna_verify.bundle.check feeds it, pokna.audit.period_report reads it.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pokna_verify.bundle.play_facts import FACES, PURPOSES, VIGO_BUST, PlayFacts, TableTerms
from pokna_verify.game.model import GameConfig

RED_FACES = 3  # faces 1-3 are red, 4-6 blue (pokna_verify.game.cube)


@dataclass
class TableTally:
    terms: TableTerms
    currency: str
    config: GameConfig
    games: int = 0
    vigo_in: int = 0
    vigo_out: int = 0
    players_in: int = 0
    players_out: int = 0
    rake: int = 0
    pots: int = 0
    rake_by_terms: int = 0
    off_terms: int = 0  # games whose rake is not what the terms take from their pot
    decisions: int = 0  # every decision bit seen (pokna_verify.bundle.play_facts)
    vigo_busts: int = 0

    def take(self, facts: PlayFacts) -> None:
        self.games += 1
        self.vigo_in += facts.vigo_in
        self.vigo_out += facts.vigo_out
        self.players_in += facts.players_in
        self.players_out += facts.players_out
        self.rake += facts.rake
        self.pots += facts.pot
        by_terms = self.config.rake_on(facts.pot)
        self.rake_by_terms += by_terms
        self.off_terms += by_terms != facts.rake
        self.decisions |= facts.decisions
        self.vigo_busts += bool(facts.decisions & VIGO_BUST)


@dataclass
class RollTally:
    """`faces[purpose][face - 1]`; `pairs[first - 1][second - 1]` for consecutive rolls of one game;
    `transitions` such pairs, `changes` those whose colours differ, `sequences` games with a roll."""

    faces: list[list[int]] = field(default_factory=lambda: [[0] * FACES for _ in PURPOSES])
    pairs: list[list[int]] = field(default_factory=lambda: [[0] * FACES for _ in range(FACES)])
    transitions: int = 0
    changes: int = 0
    sequences: int = 0

    def take(self, rolls: bytes) -> None:
        previous = 0
        for code in rolls:
            face = code & 7
            self.faces[code >> 3][face - 1] += 1
            if previous:
                self.pairs[previous - 1][face - 1] += 1
                self.transitions += 1
                self.changes += (previous <= RED_FACES) != (face <= RED_FACES)
            previous = face
        self.sequences += bool(rolls)

    @property
    def rolls(self) -> int:
        return sum(sum(row) for row in self.faces)

    @property
    def runs(self) -> int:
        """Runs of one colour, within games: each game's first roll starts one, each change another."""
        return self.sequences + self.changes


@dataclass
class PlayTally:
    """`settled_from` / `settled_to`: the period, both ends included (None: open)."""

    settled_from: datetime | None = None
    settled_to: datetime | None = None
    tables: dict[tuple[TableTerms, str], TableTally] = field(default_factory=dict)
    rolls: RollTally = field(default_factory=RollTally)
    pending: dict[str, PlayFacts] = field(default_factory=dict)
    cancelled: int = 0
    outside: int = 0  # settled before or after the period
    first_settled_at: datetime | None = None
    last_settled_at: datetime | None = None

    def game(self, game_id: str, facts: PlayFacts) -> None:
        """A game record whose proof was read: it counts once its last transfer is read."""
        if facts.cancelled:
            self.cancelled += 1
            return
        self.pending[game_id] = facts

    def transaction(self, line: Mapping[str, Any], closed: Container[str]) -> None:
        """A checked ledger line; `closed`: the games whose every transfer has been read."""
        game_id = line["metadata"].get("game_id")
        if isinstance(game_id, str) and game_id in closed and game_id in self.pending:
            self.settled(self.pending.pop(game_id), line["created_at"], line["postings"][0]["currency"])

    def settled(self, facts: PlayFacts, created_at: str, currency: str) -> None:
        """A game whose pot was paid out at `created_at` (the ledger's RFC 3339 UTC time), in `currency`."""
        moment = datetime.fromisoformat(created_at)
        if (self.settled_from is not None and moment < self.settled_from) or (
            self.settled_to is not None and moment > self.settled_to
        ):
            self.outside += 1
            return
        key = (facts.terms, currency)
        table = self.tables.get(key)
        if table is None:
            table = self.tables[key] = TableTally(facts.terms, currency, facts.terms.config())
        table.take(facts)
        self.rolls.take(facts.rolls)
        if self.first_settled_at is None or moment < self.first_settled_at:
            self.first_settled_at = moment
        if self.last_settled_at is None or moment > self.last_settled_at:
            self.last_settled_at = moment

    @property
    def games(self) -> int:
        return sum(table.games for table in self.tables.values())

    @property
    def unfinished(self) -> int:
        """Games whose pot was not paid out within the bundle's range (or whose last transfer is missing)."""
        return len(self.pending)
