"""The period report as one self-contained HTML page, from the report's JSON document alone
(pokna.audit.period_report): every figure shown is in the JSON. No script, no font, no stylesheet or image
from elsewhere: the charts are inline SVG (pokna.report_page.charts), the style is in the page, and it
opens offline. Laid out for a phone first; wide tables stack into labelled rows below 700 px.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

from pokna.report_page import charts
from pokna.report_page.markup import (
    amount,
    facts,
    figure,
    grid_table,
    interval,
    p_value,
    percent,
    span,
    stacked_table,
    text,
    verdict,
)
from pokna.report_page.style import STYLESHEET

SIDES = {"vigo": "The Vigo", "players": "The players", "operator": "The operator (rake)"}
PURPOSE_NAMES = {
    "favor": "Favor",
    "seek": "Seek",
    "challenge_favor": "Challenge favor",
    "challenge": "Challenge roll",
}


def render_page(document: dict[str, Any]) -> str:
    bundle, testing = document["bundle"], document["testing"]
    title = f"RTP and RNG report, tenant {bundle['tenant_id']}"
    body = "".join(
        [
            _header(document),
            _reading(testing),
            _rtp(document["rtp"], testing),
            _rng(document["rng"], testing),
            _tests(document["tests"], testing),
            _method(document),
        ]
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_policy(body)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title)}</title><style>{STYLESHEET}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )


def _policy(body: str) -> str:
    """The page's Content-Security-Policy: nothing but its own style sheets, each by its hash (the page's and
    the one in each chart). No script, fetch, image, font or form, so a name in the bundle that slipped past
    escaping could run nothing and send nothing anywhere. The charts' `style` attributes (hundreds of
    distinct ones, matplotlib's) are allowed whole by `style-src-attr`: with nothing else allowed they can
    only change how the page looks. `style-src` is for browsers without the CSP 3 split."""
    sheets = [STYLESHEET, *re.findall(r"<style[^>]*>(.*?)</style>", body, flags=re.DOTALL)]
    hashes = " ".join(
        sorted(
            {
                f"'sha256-{base64.b64encode(hashlib.sha256(sheet.encode()).digest()).decode()}'"
                for sheet in sheets
            }
        )
    )
    return (
        f"default-src 'none'; style-src-elem {hashes}; style-src-attr 'unsafe-inline'; "
        "style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
    )


def _header(document: dict[str, Any]) -> str:
    bundle, period, testing = document["bundle"], document["period"], document["testing"]
    flags = testing["flags"]
    if period["from"] is None and period["to"] is None:
        window = "every game whose pot was paid out in the bundle"
    else:
        window = f"games whose pot was paid out from {period['from'] or 'the start'} to {period['to'] or 'the end'}"
    tables = len(document["rtp"]["tables"])
    paid = ""
    if period["first_settled_at"] is not None:
        paid = f" (first paid out {period['first_settled_at']}, last {period['last_settled_at']})"
    state = (
        f'<p class="verdict flagged">{flags} figure{"s" if flags != 1 else ""} flagged: see below.</p>'
        if flags
        else '<p class="verdict clear">No figure is flagged at the stated level.</p>'
    )
    return (
        '<header><p class="kicker">Pokna audit · RTP and RNG report</p>'
        f"<h1>Tenant {text(bundle['tenant_id'])}</h1>"
        f"<p>Period: {text(window)}{text(paid)}. <strong>{period['games']:,} games</strong> in {tables} table "
        f"configuration{'s' if tables != 1 else ''}, {document['rng']['rolls']:,} rolls.</p>"
        f"<p>Bundle <code>{text(bundle['source'])}</code> ({text(bundle['range'])}): verdict "
        f"<strong>{text(bundle['verdict'].upper())}</strong>. Every proof, roll and money movement was checked in "
        "the same pass that counted these figures.</p>"
        f"{state}</header>"
    )


def _reading(testing: dict[str, Any]) -> str:
    paragraphs = "".join(f"<p>{text(line)}</p>" for line in testing["meaning"])
    return (
        '<section id="reading"><h2>Reading the p-values</h2>'
        + facts(
            [
                ("Tests run", str(testing["tests_run"])),
                (
                    "Flag level per test",
                    f"{testing['per_test_level']:.2g} (= {testing['family_alpha']} / {testing['tests_run']})",
                ),
                ("Correction for many tests", text(testing["correction"].capitalize())),
                ("Interval confidence", percent(testing["interval_confidence"], 3)),
                ("Figures flagged", str(testing["flags"])),
            ]
        )
        + paragraphs
        + "</section>"
    )


def _rtp(rtp: dict[str, Any], testing: dict[str, Any]) -> str:
    level = percent(testing["interval_confidence"], 3)
    intro = (
        "<p>RTP is what a side was paid out over what it paid in. The theoretical RTP is the same ratio of "
        "the exact expectations (<code>pokna odds</code>: unlimited balances, every player following one "
        f"policy); the interval is where chance alone keeps the realized RTP of this many games with {level} "
        "confidence (normal approximation, from the exact mean and variance of one game's result). The "
        "Vigo's and the players' returns include each other's stakes: Pokna is played between them, the "
        "operator takes only the rake.</p>"
    )
    cards = "".join(_table_card(table, level) for table in rtp["tables"])
    chart = figure(
        charts.rtp_chart(rtp["tables"]),
        "Each tested side: band, the interval chance allows; line, the theoretical RTP; dot, the realized RTP "
        "(red when flagged).",
    )
    return f'<section id="rtp"><h2>Return to player</h2>{intro}{cards}{chart}</section>'


def _table_card(table: dict[str, Any], level: str) -> str:
    rows = []
    operator = None
    for side in table["sides"]:
        if side["side"] == "operator":
            operator = side
            continue
        theory = side["theoretical"]
        rows.append(
            [
                text(SIDES[side["side"]]),
                amount(side["staked"]),
                amount(side["returned"]),
                f"{side['net']:+,}",
                percent(side["rtp"]),
                "—" if theory is None else span(theory["low"], theory["high"]),
                interval(side["interval"]),
                p_value(side["test"]["p_value"]),
                verdict(side["test"]),
            ]
        )
    headers = [
        "Side",
        "Staked",
        "Returned",
        "Net",
        "RTP",
        "Theoretical",
        f"Interval ({level})",
        "p-value",
        "Result",
    ]
    source = table["odds_source"]
    return (
        f'<article class="card"><h3>{text(table["name"])}</h3>'
        f"<p>{table['games']:,} games. Policy: {text(table['policy_basis'])}.</p>"
        + (f'<p class="muted">Expectations from {text(source)}.</p>' if source else "")
        + stacked_table(
            headers, rows, caption="Money staked and returned, per side", number_columns=range(1, 8)
        )
        + f"<h4>The house's rake against its terms</h4>{_rake_facts(table, operator, level)}</article>"
    )


def _rake_facts(table: dict[str, Any], operator: dict[str, Any] | None, level: str) -> str:
    rake = table["rake"]
    if (table["rake_bps"] == 0 or table["rake_cap"] == 0) and rake["taken"] == 0 == rake["by_terms"]:
        return f"<p>No rake terms, and no rake taken from the {amount(rake['pots'])} paid out in pots.</p>"
    cap = "uncapped" if table["rake_cap"] is None else f"capped at {table['rake_cap']:,} per pot"
    off = rake["games_off_terms"]
    rows = [
        ("Configured rake", f"{table['rake_bps']} basis points of each pot, {cap}"),
        ("Pots paid out", amount(rake["pots"])),
        ("Rake taken", amount(rake["taken"])),
        ("Rake the terms give on these pots", amount(rake["by_terms"])),
        (
            "Games whose rake differs from the terms",
            f'<strong class="flag">{off:,} FLAGGED</strong>' if off else "0",
        ),
        (
            "Effective rate",
            "—" if rake["effective_bps"] is None else f"{rake['effective_bps']:.1f} basis points",
        ),
    ]
    if operator is not None:
        theory = operator["theoretical"]
        rows += [
            ("Rake per unit staked", percent(operator["rtp"], 3)),
            ("Theoretical", "—" if theory is None else span(theory["low"], theory["high"], 3)),
            (f"Interval ({level})", interval(operator["interval"], 3)),
            ("p-value", f"{p_value(operator['test']['p_value'])} ({verdict(operator['test'])})"),
        ]
    return facts(rows)


def _rng(rng: dict[str, Any], testing: dict[str, Any]) -> str:
    tests = {test["key"]: test for test in rng["tests"]}
    purposes = [purpose for purpose in rng["purposes"] if purpose["rolls"] > 0]
    columns = [PURPOSE_NAMES.get(purpose["purpose"], "All") for purpose in purposes]
    face_rows: list[tuple[str, list[str]]] = [
        (f"Face {face + 1}", [amount(purpose["faces"][face]) for purpose in purposes]) for face in range(6)
    ]
    face_rows += [
        ("Red", [amount(purpose["red"]) for purpose in purposes]),
        ("Blue", [amount(purpose["blue"]) for purpose in purposes]),
        ("Rolls", [amount(purpose["rolls"]) for purpose in purposes]),
        ("p, faces", [_p_cell(tests[purpose["face_test"]]) for purpose in purposes]),
        ("p, colours", [_p_cell(tests[purpose["colour_test"]]) for purpose in purposes]),
    ]
    faces_table = grid_table(
        "",
        columns,
        face_rows,
        caption="Counts of each face (1-3 red, 4-6 blue) and colour, per roll purpose; "
        "p-values of the chi-square tests (their statistics under Every test)",
    )
    faces_chart = figure(
        charts.faces_chart(purposes, testing["z"]),
        "Share of each face; dashed line, one in six; band, where chance keeps one face's share at the report's "
        "level (face by face; the chi-square test above judges the six together).",
    )
    pairs, runs = rng["pairs"], rng["runs"]
    pair_rows = [(f"Face {i + 1}", [amount(count) for count in row]) for i, row in enumerate(pairs["table"])]
    pairs_table = grid_table(
        "roll \\ next",
        [str(face) for face in range(1, 7)],
        pair_rows,
        caption="Consecutive rolls within a game",
    )
    residuals = pairs["standardized_residuals"]
    pairs_chart = figure(
        charts.pairs_chart(residuals) if residuals is not None else None,
        "Standardized residuals (observed minus expected, over the square root of expected): beyond about ±3 is rare.",
    )
    runs_test = tests[runs["test"]]
    runs_facts = facts(
        [
            ("Games with rolls", amount(runs["games"])),
            ("Pairs of consecutive rolls", amount(runs["pairs"])),
            ("Colour changes", amount(runs["changes"])),
            ("Runs of one colour", amount(runs["runs"])),
            (
                "Runs expected",
                f"{runs['expected_runs']:,.1f} (standard deviation {runs['standard_deviation']:.1f})",
            ),
            ("z, p-value", _p_cell(runs_test, with_statistic=True)),
        ]
    )
    return (
        '<section id="rng"><h2>RNG output</h2>'
        "<p>Every roll was recomputed from the revealed seeds while the bundle was verified; these are the "
        "faces it produced. An honest cube shows each face one time in six and each colour half the time, "
        "whatever the roll's purpose, and each roll is independent of the one before it.</p>"
        f"<h3>Faces and colours</h3>{faces_table}{faces_chart}"
        f"<h3>Independence of consecutive rolls</h3>{pairs_table}<p>{_test_line(tests[pairs['test']])}</p>{pairs_chart}"
        "<h3>Runs of one colour</h3><p>Within each game, each next roll changes colour with probability exactly "
        "1/2 when the cube is honest, whatever the rolls before it: too few changes would mean streaks, too "
        f"many, alternation.</p>{runs_facts}</section>"
    )


def _p_cell(test: dict[str, Any], with_statistic: bool = False) -> str:
    if test["p_value"] is None:
        return '<span class="muted">not run</span>'
    statistic = f"{test['statistic']:.2f}, p = " if with_statistic else ""
    mark = ' <strong class="flag">FLAGGED</strong>' if test["flagged"] else ""
    return f"{statistic}{p_value(test['p_value'])}{mark}"


def _test_line(test: dict[str, Any]) -> str:
    if test["p_value"] is None:
        return f"{text(test['title'])}: not run ({text(test['not_run'])})."
    freedom = f", {test['degrees_of_freedom']} degrees of freedom" if test["degrees_of_freedom"] else ""
    return (
        f"{text(test['title'])}: {text(test['method'])}; statistic {test['statistic']:.2f}{freedom}, "
        f"p = {p_value(test['p_value'])} ({verdict(test)})."
    )


def _tests(tests: list[dict[str, Any]], testing: dict[str, Any]) -> str:
    rows = [
        [
            text(test["title"]),
            text(test["method"]),
            "—" if test["statistic"] is None else f"{test['statistic']:.3g}",
            p_value(test["p_value"]),
            verdict(test),
        ]
        for test in tests
    ]
    chart = figure(
        charts.p_values_chart(tests, testing["per_test_level"]),
        "Every test run: its p-value (red when flagged), the flag level (red line) and 0.05 (dotted) for reference.",
    )
    table = stacked_table(
        ["Test", "Method", "Statistic", "p-value", "Result"],
        rows,
        caption="Every test of this report",
        text_columns={1},
        number_columns={2, 3},
    )
    return f'<section id="tests"><h2>Every test</h2>{table}{chart}</section>'


def _method(document: dict[str, Any]) -> str:
    period, bundle = document["period"], document["bundle"]
    left = period["left_out"]
    notes = "".join(f"<li>{text(note)}</li>" for note in bundle["notes"])
    return (
        '<section id="method"><h2>Method and sources</h2>'
        + facts(
            [
                ("Which games", text(period["rule"])),
                (
                    "First and last paid out",
                    f"{text(period['first_settled_at'] or '—')} and {text(period['last_settled_at'] or '—')}",
                ),
                ("Cancelled (no money moved)", amount(left["cancelled"])),
                ("Paid out outside the period", amount(left["outside_the_period"])),
                ("Not paid out within the bundle", amount(left["not_paid_out_in_the_bundle"])),
                ("Still in play (no proof yet)", amount(left["still_in_play"])),
                ("Bundle checks", text(", ".join(bundle["checks"]))),
                ("Rolls recomputed", amount(bundle["rolls_recomputed"])),
            ]
        )
        + "<p>Exact odds: Pokna's own rules package (<code>pokna_verify.game.odds</code> for the expectations, "
        "<code>pokna_verify.game.odds_spread</code> for one game's second moments). Distributions: SciPy "
        "(<code>scipy.stats</code>: chi-square, normal). Charts: Matplotlib's SVG backend. The JSON written "
        f"beside this page holds every figure shown (report <code>{text(document['report'])}</code>, "
        f"format {document['format']}).</p>"
        + (f"<h3>Notes from the bundle check</h3><ul>{notes}</ul>" if notes else "")
        + "</section>"
    )
