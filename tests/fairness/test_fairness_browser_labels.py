"""The verifier page names seats the way the operator does and says who gained what (issue 26).

Games from the engine (test_fairness_browser_replay) are given display labels in their signed terms and
signed again, as the service signs a game created with `seat_labels`. The page must use the labels in the
story, the tables and the summary; a lone survivor who claims back only their own ante is told as having
got it back (net 0), not as a winner of nothing; a game without labels reads as it always did. A screenshot
of the labelled game is saved under the test's tmp path.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fairness_samples import KEY_RING, NEW_KEY
from test_fairness_browser_replay import play_random_game
from test_fairness_browser_screens import PHONE, rich_game

from pokna_verify.crypto.signing import sign_document
from support.browser import Browser, Site, browser_session, serving

pytestmark = pytest.mark.xdist_group("browser")

DUEL_LABELS = ["Han", "Leia"]
RICH_LABELS = ["Jabba", "Leia", "Lando", "Chewie", "Rey", "Finn", "Poe"]
LONG_LABELS = ["W" * 40, "M" * 40]  # the longest a label may be, with no place to break a line
CLAIMED, RICH, PLAIN, LONG = (
    f"{name}-labels-token-{'l' * 32}" for name in ("claimed", "rich", "plain", "long")
)


def labelled(link: dict[str, Any], labels: list[str]) -> dict[str, Any]:
    """The link of the same game, its terms naming the seats, signed again (as the service would sign it)."""
    proof = copy.deepcopy(link["proof"])
    receipt = copy.deepcopy(link["commitment"])
    for document in (proof, receipt):
        for seat in document["game"]["seats"]:
            seat["label"] = labels[seat["seat"]]
    return {**link, "proof": sign_document(proof, NEW_KEY), "commitment": sign_document(receipt, NEW_KEY)}


def claimed_duel() -> dict[str, Any]:
    """A Vigo and one player, who survives alone and claims: the pot is the player's own ante."""
    game = play_random_game(0)
    assert {"outcome:claimed", "players:1"} <= game.kinds, game.kinds
    return labelled(game.link, DUEL_LABELS)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    rich = rich_game().link
    seats = len(rich["proof"]["game"]["seats"])
    links = {
        CLAIMED: claimed_duel(),
        RICH: labelled(rich, RICH_LABELS[:seats]),
        PLAIN: play_random_game(0).link,
        LONG: labelled(play_random_game(0).link, LONG_LABELS),
    }
    with serving(Site(key_ring=KEY_RING.to_json(), links=links)) as site:
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with browser_session() as browser:
        browser.set_width(1280)
        yield browser


STATE = """
(() => {
  const all = (selector, read) => Array.from(document.querySelectorAll(selector), read);
  return {
    verdict: document.querySelector('#verdict').textContent,
    summary: document.querySelector('#summary').textContent,
    gains: Object.fromEntries(all('#gains li', (li) => [li.dataset.seat, li.textContent])),
    seeds: all('#seeds tbody tr', (tr) => tr.cells[0].textContent),
    net: all('#net tbody tr', (tr) => tr.cells[0].textContent),
    steps: all('#steps > li', (li) => li.textContent),
    outcome: document.querySelector('#outcome').textContent,
  };
})()
"""


# The window's width and the page's: a phone's window grows to fit a page that would scroll sideways.
WIDTHS = "[innerWidth, document.documentElement.scrollWidth]"


def shown(browser: Browser, site: Site, token: str) -> dict[str, Any]:
    browser.open(f"{site.origin}/verify?proof={token}")
    state: dict[str, Any] = browser.evaluate(STATE)
    assert state["verdict"] == "VALID", state
    return state


def test_a_lone_survivor_who_claims_their_own_ante_got_it_back(browser: Browser, site: Site) -> None:
    state = shown(browser, site, CLAIMED)
    assert state["seeds"] == ["Han (the Vigo)", "Leia"]
    assert "named as the operator named them" in state["summary"]
    assert state["net"] == ["Han (the Vigo)", "Leia"]
    assert state["gains"]["1"].startswith("Leia got their ante back"), state["gains"]
    assert "net 0" in state["gains"]["1"]
    assert state["gains"]["0"] == "Han (the Vigo) neither paid nor received anything."
    assert any("Leia" in step and "claim" in step for step in state["steps"]), state["steps"]
    assert "Player 1" not in " ".join(state["steps"]) + state["outcome"] + state["summary"]


def test_labels_name_every_seat_of_a_long_game(browser: Browser, site: Site, tmp_path: Path) -> None:
    state = shown(browser, site, RICH)
    seats = len(state["seeds"])
    assert state["seeds"] == [f"{RICH_LABELS[0]} (the Vigo)", *RICH_LABELS[1:seats]]
    story = " ".join(state["steps"]) + state["outcome"] + state["summary"]
    assert "Player " not in story
    assert "the Vigo" in story
    assert all(label in story for label in RICH_LABELS[1:seats])
    assert any(words.split(" ")[1] == "gained" for words in state["gains"].values()), state["gains"]
    assert any(" lost " in words for words in state["gains"].values()), state["gains"]
    browser.screenshot(tmp_path / "labelled-rich-game.png")
    print(f"screenshot: {tmp_path / 'labelled-rich-game.png'}")
    assert (tmp_path / "labelled-rich-game.png").stat().st_size > 10_000


def test_without_labels_the_page_says_the_vigo_and_player_n(browser: Browser, site: Site) -> None:
    state = shown(browser, site, PLAIN)
    assert state["seeds"] == ["The Vigo", "Player 1"]
    assert "named as the operator" not in state["summary"]
    assert state["gains"]["1"].startswith("Player 1 got their ante back"), state["gains"]


def test_the_longest_labels_do_not_push_the_page_wider_than_a_phone(browser: Browser, site: Site) -> None:
    browser.set_width(PHONE)
    try:
        state = shown(browser, site, LONG)
        widths = browser.evaluate(WIDTHS)
    finally:
        browser.set_width(1280)
    assert state["seeds"] == [f"{LONG_LABELS[0]} (the Vigo)", LONG_LABELS[1]]
    assert widths == [PHONE, PHONE]
