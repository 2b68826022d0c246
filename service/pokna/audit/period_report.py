"""A period's RTP and RNG report, as one JSON document: every figure the page shows (pokna.report_page
renders this document and nothing else). Made only from a bundle that verified (pokna_verify.bundle.check,
the same pass kept pokna_verify.bundle.play_tally's sums); pure, no I/O.

The tests of both sections form one family: the flag level is set by their number (pokna.audit.significance),
and each RTP interval is drawn at that level.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from scipy import stats

from pokna.audit.rng_figures import rng_tests
from pokna.audit.rtp_figures import MIN_GAMES, TableFigures, table_figures, table_key
from pokna.audit.significance import Test, level_for
from pokna_verify.bundle.play_tally import PlayTally, TableTally
from pokna_verify.bundle.report import BundleReport

REPORT: Final = "pokna.audit.period_report"
FORMAT: Final = 1


def period_document(
    tally: PlayTally,
    bundle: BundleReport,
    *,
    source: str,
    settled_from: datetime | None = None,
    settled_to: datetime | None = None,
) -> dict[str, Any]:
    """`bundle`: the verdict of the pass that kept `tally` (VALID, or NOT REVEALED: games still in play
    are left out and counted); `source`: how the bundle is named on the page."""
    tables = sorted(tally.tables.values(), key=lambda table: table_key(table.terms, table.currency))
    per_table = [(table, table_figures(table)) for table in tables]
    rng_family, rng = rng_tests(tally.rolls)
    family: list[Test] = [side.test for _, figures in per_table for side in figures.sides] + rng_family
    level = level_for(family)
    z = float(stats.norm.isf(level.per_test / 2))
    # A table whose rake differs from its terms on some game is a flag of its own: no chance involved.
    flags = sum(test.p_value is not None and test.p_value < level.per_test for test in family)
    flags += sum(table.off_terms > 0 for table in tables)
    return {
        "report": REPORT,
        "format": FORMAT,
        "bundle": {
            "source": source,
            "tenant_id": bundle.tenant_id,
            "range": bundle.describe_range(),
            "verdict": str(bundle.verdict),
            "games": sum(bundle.games.values()),
            "rolls_recomputed": bundle.rolls,
            "checks": bundle.checks,
            "notes": bundle.notes,
        },
        "period": {
            "from": _moment(settled_from),
            "to": _moment(settled_to),
            "rule": "a game counts in the period in which its pot was paid out (its last transfer's time), "
            "both ends included",
            "games": tally.games,
            "first_settled_at": _moment(tally.first_settled_at),
            "last_settled_at": _moment(tally.last_settled_at),
            "left_out": {
                "cancelled": tally.cancelled,
                "outside_the_period": tally.outside,
                "not_paid_out_in_the_bundle": tally.unfinished,
                "still_in_play": len(bundle.unrevealed_games),
            },
        },
        "testing": level.to_json(flags) | {"z": z},
        "rtp": {
            "min_games": MIN_GAMES,
            "tables": [_table_json(table, figures, z, level.per_test) for table, figures in per_table],
        },
        "rng": rng | {"tests": [test.to_json(level.per_test) for test in rng_family]},
        "tests": [test.to_json(level.per_test) for test in family],
    }


def _table_json(table: TableTally, figures: TableFigures, z: float, level: float) -> dict[str, Any]:
    terms = table.terms
    return {
        "name": table_key(terms, table.currency),
        "players": terms.players,
        "stake": terms.stake,
        "challenge_raise": terms.challenge_raise,
        "rake_bps": terms.rake_bps,
        "rake_cap": terms.rake_cap,
        "currency": table.currency,
        "games": table.games,
        "policies": [policy.label for policy in figures.policies],
        "policy_basis": figures.basis,
        "odds_source": figures.odds_source,
        "sides": [side.to_json(z, level) for side in figures.sides],
        "rake": {
            "taken": table.rake,
            "pots": table.pots,
            "effective_bps": 10_000 * table.rake / table.pots if table.pots else None,
            "by_terms": table.rake_by_terms,
            "games_off_terms": table.off_terms,
            "flagged": table.off_terms > 0,
        },
    }


def _moment(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")
