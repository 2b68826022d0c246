"""The verifier page of a logged game, in real Chromium against a real `pokna serve`: games played over HTTP,
`pokna log sequence --once` run as an operator runs it, then the game's `verify_url` opened. The page checks
the link's place in the public log in JavaScript (the audit path with WebCrypto SHA-256, the checkpoint's
Ed25519 signature with the published key) and says "game #N of this table's public log"; the same link with
one path hash changed, pasted into the page, shows the check failed and the verdict INVALID. A screenshot
of each is saved (for a person to look at; the assertions are on the page's text)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.models.ledger import Account
from support.browser import Browser, browser_session
from support.game_play import Api, new_tenant_key, obliging, play
from support.servers import serving

ORIGIN = "page.example/games"
SCREENSHOTS = os.environ.get("POKNA_SCREENSHOTS")
PAGE_STATE = """
(() => {
  const line = document.querySelector('#public-log');
  const check = document.querySelector('#checks li[data-check="public_log"]');
  return {
    verdict: document.querySelector('#verdict').textContent,
    line: line ? line.textContent : null,
    lineStatus: line ? line.dataset.status : null,
    check: check ? check.dataset.status : null,
    problems: document.querySelector('#verdict-problems').textContent,
  };
})()
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with browser_session() as browser:
        browser.set_width(390)
        yield browser


def _shot(browser: Browser, tmp_path: Path, name: str) -> None:
    folder = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    browser.screenshot(folder / name)


def test_the_page_shows_and_checks_the_games_place_in_the_public_log(
    database_url: str, sessions: sessionmaker[Session], tmp_path: Path, browser: Browser
) -> None:
    data_dir = tmp_path / "data"
    env = {"POKNA_DATABASE_URL": database_url, "POKNA_ENV": "test", "POKNA_PUBLIC_LOG_ORIGIN": ORIGIN}
    sequencer = [str(Path(sys.executable).with_name("pokna")), "log", "sequence", "--once", "--json"]
    with serving(env, data_dir) as server, httpx.Client(base_url=server.base, timeout=30) as http:
        api = Api(http, new_tenant_key(sessions))
        wallets = [api.wallet(100) for _ in range(3)]
        with sessions() as session:
            tenant_id = session.scalar(select(Account.tenant_id).where(Account.id == wallets[0]))
        games = [play([api], api.create_game(wallets[0], wallets[1:], stake=2), obliging) for _ in range(3)]
        done = subprocess.run(
            sequencer,
            env={**os.environ, **env, "POKNA_DATA_DIR": str(data_dir)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert (done.returncode, json.loads(done.stdout)) == (0, {"games_logged": 3}), done.stderr
        game = api.game(str(games[1]["id"]))

        browser.open(f"{server.base}{game['fairness']['verify_url']}")
        state: dict[str, Any] = browser.evaluate(PAGE_STATE)
        _shot(browser, tmp_path, "public-log-included.png")
        assert state["verdict"] == "VALID", state
        assert (state["lineStatus"], state["check"]) == ("pass", "pass"), state
        assert state["line"].startswith("Game #2 of this table's public log"), state
        assert f"{ORIGIN}/{tenant_id}" in state["line"]
        assert "proven in its checkpoint of 3 games, signed by a published key" in state["line"]

        link: dict[str, Any] = http.get(game["fairness"]["public_url"]).json()
        first = base64.b64decode(link["public_log"]["inclusion_path"][0])
        link["public_log"]["inclusion_path"][0] = base64.b64encode(bytes([first[0] ^ 1]) + first[1:]).decode()
        browser.evaluate(f"document.querySelector('#proof-json').value = {json.dumps(json.dumps(link))}")
        browser.evaluate(
            "document.body.dataset.ready = 'false'; document.querySelector('#paste-button').click()"
        )
        browser.wait_ready()
        tampered: dict[str, Any] = browser.evaluate(PAGE_STATE)
        _shot(browser, tmp_path, "public-log-tampered.png")
        assert tampered["verdict"] == "INVALID", tampered
        assert (tampered["lineStatus"], tampered["check"]) == ("fail", "fail"), tampered
        assert "Public log check FAILED: the log's inclusion proof fails" in tampered["line"]
        assert "public log" in tampered["problems"]
