"""The RTP section against games the rules played (pokna_verify.game.step, the service's own roll stream): honest
games agree with the exact odds; games whose payouts were altered after the rules made them (which a
verified bundle cannot hold: money follows the dice) are flagged; tables no one policy describes are shown
but not tested, saying why."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any

from pokna.audit.period_report import period_document
from pokna.audit.rtp_figures import MIN_GAMES, table_figures
from pokna.audit.significance import Level
from pokna_verify.bundle.play_facts import PlayFacts
from pokna_verify.bundle.play_tally import PlayTally
from pokna_verify.bundle.report import BundleReport
from pokna_verify.game import GameConfig
from pokna_verify.game.odds import LonePolicy, Policy, VotePolicy, table_odds
from support.played_rules import Alteration, honest_faces, play_games, short_payouts

CLAIM_SPLIT = Policy(LonePolicy.CLAIM, VotePolicy.SPLIT)
PAID_AT = "2026-12-01T12:00:00.000000Z"


def tallied(*batches: list[PlayFacts]) -> PlayTally:
    tally = PlayTally()
    for batch in batches:
        for facts in batch:
            tally.settled(facts, PAID_AT, "CREDIT")
    return tally


def games(
    config: GameConfig, policy: Policy, count: int, seed: str, alteration: Alteration | None = None
) -> list[PlayFacts]:
    return play_games(config, policy, count, honest_faces(seed), alteration)


def sides_of(tally: PlayTally) -> dict[str, dict[str, Any]]:
    (table,) = tally.tables.values()
    level = Level(tests_run=3)
    z = 3.14  # two-sided, 0.01 / 3 per test
    return {side.side: side.to_json(z, level.per_test) for side in table_figures(table).sides}


def test_honest_games_agree_with_the_exact_odds() -> None:
    config = GameConfig.create(stake=5, challenge_raise=3, player_count=3, rake_bps=1_000, rake_cap=2)
    tally = tallied(games(config, CLAIM_SPLIT, 3_000, "rtp-honest"))
    sides = sides_of(tally)
    odds = table_odds(config, CLAIM_SPLIT)
    players_in = sum((seat.expected_paid_in for seat in odds.seats[1:]), Fraction(0))
    players_out = sum((seat.expected_paid_out for seat in odds.seats[1:]), Fraction(0))
    assert sides["players"]["theoretical"] == {"low": float(players_out / players_in)} | {
        "high": float(players_out / players_in)
    }
    assert sides["operator"]["theoretical"]["low"] == float(odds.rake_per_unit_staked)
    for side in ("vigo", "players", "operator"):
        figures = sides[side]
        interval = figures["interval"]
        assert isinstance(interval, dict)
        assert interval["low"] <= figures["rtp"] <= interval["high"], side
        assert figures["test"]["flagged"] is False
    (table,) = tally.tables.values()
    assert table.rake == table.rake_by_terms
    assert table.off_terms == 0
    assert table.games == 3_000


def test_games_whose_payouts_were_altered_are_flagged() -> None:
    """The same dice, but a lone survivor's claim arrives one stake short."""
    config = GameConfig.create(stake=5, challenge_raise=3, player_count=3)
    honest = sides_of(tallied(games(config, CLAIM_SPLIT, 3_000, "rtp-altered")))
    altered = sides_of(tallied(games(config, CLAIM_SPLIT, 3_000, "rtp-altered", short_payouts(5))))
    assert honest["players"]["test"]["flagged"] is False
    assert altered["players"]["test"]["flagged"] is True
    assert altered["players"]["rtp"] < altered["players"]["interval"]["low"]
    assert altered["players"]["staked"] == honest["players"]["staked"]


def test_a_rake_off_its_terms_is_counted() -> None:
    config = GameConfig.create(stake=10, challenge_raise=10, player_count=2, rake_bps=500)
    played = games(config, CLAIM_SPLIT, 200, "rtp-rake")
    skimmed = [replace(facts, rake=facts.rake + 1, players_out=facts.players_out - 1) for facts in played[:7]]
    tally = tallied(played[7:], skimmed)
    (table,) = tally.tables.values()
    assert table.off_terms == 7
    assert table.rake == table.rake_by_terms + 7
    document = period_document(tally, BundleReport(tenant_id="ten_rake"), source="bundle.jsonl")
    (shown,) = document["rtp"]["tables"]
    assert shown["rake"]["flagged"] is True
    assert shown["rake"]["games_off_terms"] == 7
    assert document["testing"]["flags"] >= 1


def test_mixed_decisions_are_shown_but_not_tested() -> None:
    config = GameConfig.create(stake=5, challenge_raise=3, player_count=2)
    challenge = Policy(LonePolicy.CHALLENGE, VotePolicy.SPLIT)
    tally = tallied(games(config, CLAIM_SPLIT, 100, "mixed-a"), games(config, challenge, 100, "mixed-b"))
    (table,) = tally.tables.values()
    figures = table_figures(table)
    assert figures.policies == []
    assert "both claimed and challenged" in figures.basis
    assert all(not side.test.ran for side in figures.sides)
    assert all(side.realized is not None for side in figures.sides)


def test_a_decision_that_never_came_up_leaves_every_fitting_policy_a_candidate() -> None:
    """With one player there is never a vote; a lone survivor always claims here."""
    config = GameConfig.create(stake=5, challenge_raise=3, player_count=4)
    tally = tallied(games(config, CLAIM_SPLIT, 40, "candidates"))
    (table,) = tally.tables.values()
    table.decisions &= ~0b0100  # as if no pot had been split: both vote policies fit
    figures = table_figures(table)
    assert [policy.vote for policy in figures.policies] == [VotePolicy.SPLIT, VotePolicy.ROLL_AGAIN]
    players = next(side for side in figures.sides if side.side == "players")
    assert len(players.expected) == 2
    document: dict[str, Any] = players.to_json(3.0, 0.001)
    assert document["theoretical"]["low"] < document["theoretical"]["high"]


def test_too_few_games_are_not_tested() -> None:
    config = GameConfig.create(stake=5, challenge_raise=3, player_count=2)
    tally = tallied(games(config, CLAIM_SPLIT, MIN_GAMES - 1, "few"))
    (table,) = tally.tables.values()
    assert all(f"at least {MIN_GAMES}" in str(side.test.not_run) for side in table_figures(table).sides)
