"""A player with nothing but the public link: a real `pokna serve`, a game played over HTTP by the
integrating app, then the link opened in real Chromium and handed to `pokna verify`, with no API key.
Every check runs and passes, the rules replay and the commitment receipt included."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from support.browser import Browser, browser_session
from support.game_play import Api, new_tenant_key, play, random_policy
from support.servers import running_server

PAGE_STATE = """
(() => ({
  verdict: document.querySelector('#verdict').textContent,
  state: document.querySelector('#verdict').dataset.state,
  border: getComputedStyle(document.querySelector('#verdict-box')).borderTopColor,
  checks: Object.fromEntries(Array.from(document.querySelectorAll('#checks li'),
    (li) => [li.dataset.check, li.dataset.status])),
}))()
"""


def _pokna_verify(link: str) -> subprocess.CompletedProcess[str]:
    """`pokna verify LINK --json` as a player runs it: the receipt and the keys come from the link."""
    pokna = Path(sys.executable).with_name("pokna")
    return subprocess.run(
        [str(pokna), "verify", link, "--json"], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with browser_session() as browser:
        browser.set_width(390)
        yield browser


def test_a_player_verifies_a_finished_game_from_its_public_link_alone(
    database_url: str, sessions: sessionmaker[Session], tmp_path: Path, browser: Browser
) -> None:
    with running_server({"POKNA_DATABASE_URL": database_url}, tmp_path / "data") as base:
        with httpx.Client(base_url=base, timeout=30) as http:
            app = Api(http, new_tenant_key(sessions))
            vigo, han, leia = (app.wallet(100) for _ in range(3))
            game = app.create_game(vigo, [han, leia], stake=5)
            public = game["fairness"]["verify_url"]
            page = http.get(public)
            assert page.headers["content-type"].startswith("text/html"), page.headers
            assert "frame-ancestors 'none'" in page.headers["content-security-policy"], page.headers
            assert page.headers["x-content-type-options"] == "nosniff", page.headers

            browser.open(f"{base}{public}")
            unrevealed: dict[str, Any] = browser.evaluate(PAGE_STATE)
            assert (unrevealed["verdict"], unrevealed["state"]) == ("NOT REVEALED YET", "unrevealed")
            early = _pokna_verify(f"{base}{game['fairness']['public_url']}")
            assert (early.returncode, json.loads(early.stdout)["verdict"]) == (3, "not_revealed"), early

            game = play([app], game, random_policy(random.Random(5), cancel_chance=0.0))
            assert game["status"] == "settled"

        browser.open(f"{base}{public}")
        state: dict[str, Any] = browser.evaluate(PAGE_STATE)
        verified = _pokna_verify(f"{base}{public}")  # the browser link players are given, as they hold it
    report = json.loads(verified.stdout)
    assert (verified.returncode, report["verdict"]) == (0, "valid"), verified
    assert {check["status"] for check in report["checks"]} == {"pass"}, report
    assert {check["name"] for check in report["checks"]} >= {"signature", "receipt", "rolls", "replay"}
    assert (state["verdict"], state["state"]) == ("VALID", "valid"), state
    # The page's inline style applied under its Content-Security-Policy header: the valid verdict's green.
    assert state["border"] == "rgb(19, 111, 42)", state
    assert set(state["checks"]) >= {"signature", "receipt", "commitment", "rolls", "replay"}, state
    assert set(state["checks"].values()) == {"pass"}, state
