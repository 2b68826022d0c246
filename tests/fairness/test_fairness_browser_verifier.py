"""verify.html in headless Chromium agrees with the Python verifier, roll for roll and check for check.

A tiny http.server on 127.0.0.1 (a secure context, so WebCrypto is available) serves the static folder and
stands in for `GET /v1/games/{id}/proof` and `GET /v1/fairness/keys`. Chromium runs with --dump-dom and the
test reads the verdict, the checks and the rolls from the resulting DOM. Nothing is downloaded: without a
Chromium binary the tests skip loudly, and under CI=true they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fairness_samples import (
    KEY_RING,
    NEW_KEY,
    OLD_KEY,
    STRANGER_KEY,
    VECTORS,
    sample_proof,
)

import pokna
from pokna.crypto.signing import sign_document
from pokna.fairness.verification import CheckStatus, verify_proof

STATIC_ROOT = Path(pokna.__file__).parent  # served so that /static/verify.html is the page


def forged_face(proof: dict[str, Any]) -> dict[str, Any]:
    proof["rolls"][3]["face"] = proof["rolls"][3]["face"] % 6 + 1
    return proof


def swapped_client_seed(proof: dict[str, Any]) -> dict[str, Any]:
    proof["client_seeds"][1]["client_seed"] = "alice.2"
    return proof


def gap_in_nonces(proof: dict[str, Any]) -> dict[str, Any]:
    del proof["rolls"][2]
    return proof


def wrong_commitment(proof: dict[str, Any]) -> dict[str, Any]:
    proof["server_seed_hash"] = "0" * 64
    return proof


PROOFS: dict[str, dict[str, Any]] = {
    "sound": sample_proof(),
    "retired-key": sample_proof(OLD_KEY),
    "unknown-key": sample_proof(STRANGER_KEY),
    "edited-face": forged_face(sample_proof()),
    "forged-face": sign_document(forged_face(sample_proof()), NEW_KEY),
    "forged-client-seed": sign_document(swapped_client_seed(sample_proof()), NEW_KEY),
    "forged-nonces": sign_document(gap_in_nonces(sample_proof()), NEW_KEY),
    "forged-commitment": sign_document(wrong_commitment(sample_proof()), NEW_KEY),
    "malformed": {key: value for key, value in sample_proof().items() if key != "rolls"},
}


class Handler(SimpleHTTPRequestHandler):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, directory=str(STATIC_ROOT), **kwargs)

    def do_GET(self) -> None:
        parts = self.path.split("?")[0].strip("/").split("/")
        if parts[:2] == ["v1", "games"] and len(parts) == 4 and parts[3] == "proof":
            proof = PROOFS.get(parts[2])
            self._json(proof, 200 if proof is not None else 404)
        elif parts == ["v1", "fairness", "keys"]:
            self._json(KEY_RING.to_json(), 200)
        elif parts[0] == "static":
            super().do_GET()
        else:
            self.send_error(404)

    def _json(self, document: object, status: int) -> None:
        body = json.dumps(document if status == 200 else {"title": "not found"}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def chromium() -> str:
    binary = os.environ.get("POKNA_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        reason = (
            "!!! BROWSER VERIFIER NOT TESTED: no Chromium binary (install it with `apt-get install -y chromium` "
            "or set POKNA_CHROMIUM) !!!"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return binary


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Page:
    verdict: str = ""
    verdict_detail: str = ""
    checks: dict[str, str] = field(default_factory=dict)
    check_messages: dict[str, str] = field(default_factory=dict)
    roll_matches: dict[int, bool] = field(default_factory=dict)
    calculator: dict[int, tuple[str, int, str]] = field(default_factory=dict)

    def failed(self) -> set[str]:
        return {name for name, status in self.checks.items() if status == "fail"}


class PageParser(HTMLParser):
    """Reads the stable ids and data- attributes verify.js writes."""

    def __init__(self) -> None:
        super().__init__()
        self.page = Page()
        self._capture: str | None = None
        self._check: str | None = None
        self._cells: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id") in ("verdict", "verdict-detail"):
            self._capture = found["id"]
        if tag == "tr" and found.get("data-check") and found.get("data-status"):
            self._check = str(found["data-check"])
            self._cells = []
            self.page.checks[self._check] = str(found["data-status"])
        if tag == "tr" and found.get("data-match") is not None:
            self.page.roll_matches[int(str(found["data-nonce"]))] = found["data-match"] == "true"
        if tag == "tr" and found.get("data-face") is not None:
            self.page.calculator[int(str(found["data-nonce"]))] = (
                str(found["data-f"]),
                int(str(found["data-face"])),
                str(found["data-color"]),
            )

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" or (tag == "p" and self._capture == "verdict-detail"):
            self._capture = None
        if tag == "tr" and self._check is not None:
            self.page.check_messages[self._check] = self._cells[-1] if self._cells else ""
            self._check = None

    def handle_data(self, data: str) -> None:
        if self._capture == "verdict":
            self.page.verdict += data
        elif self._capture == "verdict-detail":
            self.page.verdict_detail += data
        if self._check is not None:
            self._cells.append(data)


def load(chromium: str, url: str) -> Page:
    with tempfile.TemporaryDirectory(prefix="pokna-chromium-") as profile:
        completed = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=10000",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    assert completed.returncode == 0, completed.stderr[-2000:]
    parser = PageParser()
    parser.feed(completed.stdout)
    assert parser.page.verdict or parser.page.calculator, completed.stdout[-2000:]
    return parser.page


@pytest.mark.parametrize("server_seed", sorted({vector[0] for vector in VECTORS}))
def test_calculator_reproduces_the_vectors(chromium: str, origin: str, server_seed: str) -> None:
    vectors = [vector for vector in VECTORS if vector[0] == server_seed]
    client_seed = vectors[0][1]
    nonces = ",".join(str(vector[2]) for vector in vectors)
    page = load(
        chromium,
        f"{origin}/static/verify.html?server_seed={server_seed}&client_seed={quote(client_seed)}&nonces={nonces}",
    )
    assert page.calculator == {nonce: (f, face, color) for _, _, nonce, f, face, color in vectors}


def test_sound_proof_is_valid_in_the_browser(chromium: str, origin: str) -> None:
    page = load(chromium, f"{origin}/static/verify.html?game=sound")
    assert page.verdict == "VALID", page
    assert page.checks["signature"] == "pass", page.check_messages["signature"]
    assert page.roll_matches == {nonce: True for nonce in range(5)}
    assert page.verdict_detail == "not run: receipt, replay"


@pytest.mark.parametrize("game", [name for name in PROOFS if name != "malformed"])
def test_browser_and_python_fail_the_same_checks(chromium: str, origin: str, game: str) -> None:
    page = load(chromium, f"{origin}/static/verify.html?game={game}")
    report = verify_proof(PROOFS[game], KEY_RING)
    python_failed = {check.name for check in report.failed}
    assert page.failed() == python_failed, (page, report.to_json())
    assert page.verdict == ("VALID" if report.valid else "INVALID")
    for check in report.checks:
        if check.status is CheckStatus.FAIL and check.name != "signature":
            assert page.check_messages[check.name] == check.message


def test_forged_roll_is_marked_on_its_row(chromium: str, origin: str) -> None:
    page = load(chromium, f"{origin}/static/verify.html?game=forged-face")
    assert page.verdict == "INVALID"
    assert page.failed() == {"rolls"}
    assert page.roll_matches == {0: True, 1: True, 2: True, 3: False, 4: True}


def test_edited_proof_fails_signature_and_roll(chromium: str, origin: str) -> None:
    page = load(chromium, f"{origin}/static/verify.html?game=edited-face")
    assert page.failed() == {"rolls", "signature"}
    assert page.roll_matches[3] is False


@pytest.mark.parametrize(("game", "detail"), [("malformed", "$.rolls: missing"), ("absent", "HTTP 404")])
def test_unusable_input(chromium: str, origin: str, game: str, detail: str) -> None:
    page = load(chromium, f"{origin}/static/verify.html?game={game}")
    assert page.verdict == "UNUSABLE"
    assert detail in page.verdict_detail
