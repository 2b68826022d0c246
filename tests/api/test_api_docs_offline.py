"""`/docs` without internet: a real `pokna serve`, headless Chromium that can reach 127.0.0.1 and resolve no
other name, and the page must render every operation from assets the service serves. The screenshot is
saved under the test's tmp path: look at it when changing the page."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from support.browser import OFFLINE_FLAGS, Browser, BrowserError, browser_session
from support.servers import running_server

pytestmark = pytest.mark.xdist_group("browser")


def _wait_for(browser: Browser, expression: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if browser.evaluate(expression) is True:
            return
        time.sleep(0.1)
    raise BrowserError(f"{expression} still false after {timeout} s; console: {browser.console[-5:]}")


def _load(browser: Browser, url: str, ready: str) -> None:
    browser.call("Page.navigate", {"url": url})
    _wait_for(browser, f"document.readyState === 'complete' && {ready}")


def _resources(browser: Browser) -> list[str]:
    names = browser.evaluate("performance.getEntriesByType('resource').map(entry => entry.name)")
    return [str(name) for name in names]


def test_docs_render_every_operation_with_no_network(tmp_path: Path, database_url: str) -> None:
    with running_server({"POKNA_DATABASE_URL": database_url}, tmp_path / "data") as base:
        # The document is built on its first request (about a second of CPU; more on a busy machine).
        with urllib.request.urlopen(f"{base}/openapi.json", timeout=60) as answer:
            document = json.load(answer)
        operations = [*document["paths"].values(), *document["webhooks"].values()]  # both are shown
        summaries = {operation["summary"] for item in operations for operation in item.values()}
        with browser_session(OFFLINE_FLAGS) as browser:
            browser.set_width(1280)
            _load(browser, f"{base}/docs", "document.querySelectorAll('.opblock').length > 0")
            shown = browser.evaluate(
                "[...document.querySelectorAll('.opblock-summary-description')].map(node => node.textContent)"
            )
            browser.screenshot(tmp_path / "docs.png")
            docs_resources = _resources(browser)
            gone = urllib.request.Request(f"{base}/redoc")
            with pytest.raises(urllib.error.HTTPError) as redoc:
                urllib.request.urlopen(gone, timeout=10)

    assert set(shown) == summaries
    for resource in docs_resources:
        assert resource.startswith(base), resource
    assert any(resource.endswith("/docs/assets/swagger-ui-bundle.js") for resource in docs_resources)
    assert redoc.value.code == 404
    assert (tmp_path / "docs.png").stat().st_size > 10_000
