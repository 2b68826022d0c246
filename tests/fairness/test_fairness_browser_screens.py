"""The verifier page as a player sees it: screenshots at a phone's width (390 px) and a desktop's (1280 px).

A settled game with roll-again passes and an uneven split, the same game before its seed is revealed, and a
forged copy of it (one payout raised, re-signed) are rendered in headless Chromium. Each screenshot is saved
as a PNG under the test's tmp path (look at them when changing the page), and the layout is measured: no
element may stick out to the right (a phone would scroll sideways), the verdict must be on the first
screen, and the text must stay readable.
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fairness_samples import KEY_RING, NEW_KEY
from test_fairness_browser_replay import GAMES, PlayedGame, play_random_game

from pokna_verify.crypto.signing import sign_document
from support.browser import Browser, Site, browser_session, serving

pytestmark = pytest.mark.xdist_group("browser")

PHONE, DESKTOP = 390, 1280
SCREEN_HEIGHT = {PHONE: 844, DESKTOP: 900}
EXPECTED = {"settled": "VALID", "unrevealed": "NOT REVEALED YET", "invalid": "INVALID"}


def rich_game() -> PlayedGame:
    """The first generated game with a roll-again pass and an uneven split at a table of 4 to 6 players."""
    for index in range(GAMES):
        game = play_random_game(index)
        table = {f"players:{count}" for count in (4, 5, 6)}
        if {"roll_again", "split:remainder", "outcome:split"} <= game.kinds and table & game.kinds:
            return game
    raise AssertionError("no game with a roll-again pass and an uneven split")


def screens(game: PlayedGame) -> dict[str, dict[str, Any]]:
    unrevealed = {**game.link, "status": "in_progress", "revealed": False, "proof": None}
    unrevealed["client_seeds"] = [
        {**entry, "client_seed": None, "source": None} if entry["seat"] == 2 else entry
        for entry in game.link["client_seeds"]
    ]
    forged = copy.deepcopy(game.proof)
    forged["transfers"][-1]["amount"] += 1
    forged["outcome"]["payouts"][-1]["amount"] += 1
    invalid = {**game.link, "proof": sign_document(forged, NEW_KEY)}
    return {"settled": game.link, "unrevealed": unrevealed, "invalid": invalid}


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    links = {f"{name}-screen-token-{'s' * 32}": link for name, link in screens(rich_game()).items()}
    with serving(Site(key_ring=KEY_RING.to_json(), links=links)) as site:
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with browser_session() as browser:
        yield browser


LAYOUT = """
(() => {
  const width = innerWidth;
  const sticking = Array.from(document.querySelectorAll('body *'))
    .filter((node) => node.getClientRects().length && node.getBoundingClientRect().right > width + 0.5)
    .map((node) => `${node.tagName.toLowerCase()}#${node.id}.${node.className}: ${node.getBoundingClientRect().right}`);
  const verdict = document.querySelector('#verdict').getBoundingClientRect();
  return {
    innerWidth: width,
    scrollWidth: document.documentElement.scrollWidth,
    scrollHeight: document.documentElement.scrollHeight,
    sticking,
    verdictBottom: verdict.bottom,
    verdict: document.querySelector('#verdict').textContent,
    smallestText: Math.min(...Array.from(document.querySelectorAll('#verdict-box, #steps li, #rolls td, #transfers td, #net td'),
      (node) => parseFloat(getComputedStyle(node).fontSize))),
    steps: document.querySelectorAll('#steps > li').length,
  };
})()
"""


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert header[12:16] == b"IHDR"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


@pytest.mark.parametrize("width", [PHONE, DESKTOP], ids=["390px", "1280px"])
@pytest.mark.parametrize("screen", list(EXPECTED))
def test_the_page_reads_on_a_phone_and_a_desktop(
    browser: Browser, site: Site, tmp_path: Path, screen: str, width: int
) -> None:
    browser.set_width(width, SCREEN_HEIGHT[width])
    browser.open(f"{site.origin}/verify?proof={screen}-screen-token-{'s' * 32}")
    layout = browser.evaluate(LAYOUT)
    assert layout["verdict"] == EXPECTED[screen]
    assert layout["innerWidth"] == width
    assert layout["scrollWidth"] <= layout["innerWidth"], layout["sticking"][:10]
    assert layout["sticking"] == []
    assert layout["verdictBottom"] <= SCREEN_HEIGHT[width], "the verdict is not on the first screen"
    assert layout["smallestText"] >= 12.5
    if screen != "unrevealed":
        assert layout["steps"] > 10

    shot = tmp_path / f"verify-{screen}-{width}px.png"
    browser.screenshot(shot)
    assert png_size(shot) == (width, layout["scrollHeight"])
