"""The report's page is one self-contained file: nothing it loads comes from elsewhere (parsed, and then
rendered by headless Chromium that can resolve no name), its charts are inline SVG, it fits a 390 px phone
without sideways scrolling, and it shows the figures of its JSON. Screenshots at both widths are saved under
the test's tmp path: look at them when changing the page."""

from __future__ import annotations

import base64
import hashlib
import re
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pokna.audit.period_report import period_document
from pokna.report_page.markup import p_value, percent
from pokna.report_page.page import render_page
from pokna_verify.bundle.play_tally import PlayTally
from pokna_verify.bundle.report import BundleReport
from pokna_verify.game import GameConfig
from pokna_verify.game.odds import LonePolicy, Policy, VotePolicy
from support.browser import OFFLINE_FLAGS, Browser, BrowserError, browser_session
from support.played_rules import honest_faces, play_games, short_payouts

pytestmark = pytest.mark.xdist_group("browser")
CLAIM_SPLIT = Policy(LonePolicy.CLAIM, VotePolicy.SPLIT)


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    """Three tables: an honest one, one whose claims were paid short (flagged), and one with a rake."""
    tally = PlayTally()
    batches = [
        (GameConfig.create(stake=5, challenge_raise=3, player_count=3), 1_500, None),
        (GameConfig.create(stake=10, player_count=2), 1_500, short_payouts(10)),
        (
            GameConfig.create(stake=100, challenge_raise=100, player_count=4, rake_bps=500, rake_cap=100),
            400,
            None,
        ),
    ]
    for index, (config, count, alteration) in enumerate(batches):
        for facts in play_games(config, CLAIM_SPLIT, count, honest_faces(f"page-{index}"), alteration):
            tally.settled(facts, "2026-12-01T12:00:00.000000Z", "CREDIT")
    bundle = BundleReport(tenant_id="ten_page", from_seq=1, to_seq=42, checks=["header", "proofs"])
    return period_document(tally, bundle, source="bundle.jsonl")


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.references: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if (
                name in ("src", "href", "xlink:href", "srcset", "action", "poster", "data")
                and value is not None
            ):
                self.references.append(value)


def test_the_page_references_nothing_outside_itself(document: dict[str, Any]) -> None:
    page = render_page(document)
    parser = _References()
    parser.feed(page)
    assert {"script", "link", "img", "iframe", "object", "embed"}.isdisjoint(parser.tags)
    assert parser.tags.count("svg") == 4  # RTP, faces, pairs, p-values
    assert parser.references, "the charts' own links (#ids) are seen"
    assert all(reference.startswith("#") for reference in parser.references), parser.references
    targets = re.findall(r"url\(([^)]*)\)", page)
    assert targets  # the charts' clip paths
    assert all(target.startswith("#") for target in targets), targets
    assert "@import" not in page
    assert "@font-face" not in page
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "every chart's ids are its own"


def test_the_page_shows_the_json_figures(document: dict[str, Any]) -> None:
    page = render_page(document)
    flagged = [test for test in document["tests"] if test["flagged"]]
    assert [test["key"] for test in flagged] == [
        "rtp.Vigo + 2, stake 10, raise 10, rake 0 bp uncapped, CREDIT.players"
    ]
    assert f"{document['testing']['flags']} figure flagged" in page
    for table in document["rtp"]["tables"]:
        assert table["name"] in page
        for side in table["sides"]:
            digits = 3 if side["side"] == "operator" else 2
            assert percent(side["rtp"], digits) in page
            assert p_value(side["test"]["p_value"]) in page
    for test in document["rng"]["tests"]:
        assert p_value(test["p_value"]) in page
    for purpose in document["rng"]["purposes"]:
        assert all(f"{count:,}" in page for count in purpose["faces"])


RECORD_VIOLATIONS = """window.violations = [];
document.addEventListener('securitypolicyviolation',
  (event) => window.violations.push(`${event.effectiveDirective}: ${event.sample}`));"""
POLICY = "document.querySelector('meta[http-equiv=\"Content-Security-Policy\"]')?.content ?? ''"


def test_the_pages_policy_allows_its_own_styles_and_nothing_else(document: dict[str, Any]) -> None:
    """No script, no fetch, no image, no font; each style sheet the page holds by its hash. The charts'
    `style` attributes are allowed whole: under `default-src 'none'` a style attribute can reach nothing."""
    page = render_page(document)
    (policy,) = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)
    directives = dict(directive.strip().split(" ", 1) for directive in policy.split(";"))
    sheets = re.findall(r"<style[^>]*>(.*?)</style>", page, flags=re.DOTALL)
    assert len(sheets) == 5  # the page's, and one in each chart
    hashes = {
        f"'sha256-{base64.b64encode(hashlib.sha256(sheet.encode()).digest()).decode()}'" for sheet in sheets
    }
    assert directives["default-src"] == "'none'"
    assert set(directives["style-src-elem"].split()) == hashes
    assert directives["style-src-attr"] == "'unsafe-inline'"
    assert "script-src" not in directives


def _wait_loaded(browser: Browser, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if browser.evaluate("document.readyState === 'complete'") is True:
            return
        time.sleep(0.05)
    raise BrowserError("the report did not load")


def test_chromium_renders_it_offline_at_phone_and_desktop_widths(
    document: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "report.html"
    path.write_text(render_page(document))
    with browser_session(OFFLINE_FLAGS) as browser:
        # Run by DevTools before the page's own parsing, so every refusal of the page's policy is seen.
        browser.call("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_VIOLATIONS})
        for width in (390, 1280):
            browser.set_width(width)
            browser.call("Page.navigate", {"url": path.as_uri()})
            _wait_loaded(browser)
            assert browser.evaluate("performance.getEntriesByType('resource').length") == 0
            assert browser.evaluate("window.violations") == []  # the policy refused nothing the page uses
            assert browser.evaluate(POLICY).startswith("default-src 'none'")
            assert browser.evaluate("document.documentElement.scrollWidth") <= width
            charts = browser.evaluate(
                "[...document.querySelectorAll('svg.chart')].map(chart => chart.getBoundingClientRect().width)"
            )
            assert len(charts) == 4
            assert all(100 < chart <= width for chart in charts), charts
            browser.screenshot(tmp_path / f"report-{width}.png")
            assert (tmp_path / f"report-{width}.png").stat().st_size > 50_000
